/**
 * Credential formats with a literal prefix (or a literal infix), as the vendors document their
 * tokens and as permissively licensed secret-scanner rule sets (secretlint, ripsecrets: MIT) list
 * them. Each format is a list of literals plus the regex of what follows them; secret-scan.ts finds
 * every literal in one pass over the text and only then runs that format's (sticky) regex at the
 * position found, so no format costs a full-text regex scan.
 */
import { plausibleKey, plausiblePassword } from './secret-labels';
import { isPlaceholder } from './secret-values';

export interface KeyFormat {
  id: string;
  /** Literals the token starts with (`anchor: 'start'`) or holds (`anchor: 'infix'`). */
  literals: string[];
  /**
   * Regex source matched at the token's start (sticky): the literal is part of it. Group 1 (if
   * any) is the random body checked against placeholders and entropy.
   */
  body: string;
  /** Minimum entropy (bits/char) of the body; 0 = the format alone suffices. */
  minEntropy?: number;
  /**
   * 'start' (default): the token starts at the literal, which must not follow a word character or
   * '-'. 'infix': the literal sits inside the token; its start is found by walking back over `back`.
   */
  anchor?: 'start' | 'infix';
  back?: (c: number) => boolean;
  /** No end boundary check (the format ends itself, e.g. a PEM header). */
  open?: boolean;
  /** Mask only group 1 (a label or URL around the value stays readable). */
  valueOnly?: boolean;
  /** Case-insensitive literal and body. */
  ci?: boolean;
  /** A further test of the match (the text is there for context). */
  check?: (m: RegExpExecArray, text: string) => boolean;
}

const F = (id: string, literals: string[], body: string, opts: Omit<KeyFormat, 'id' | 'literals' | 'body'> = {}): KeyFormat => ({ id, literals, body, ...opts });
const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 102);
const isDigit = (c: number) => c >= 48 && c <= 57;
const isAlnum = (c: number) => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isAzureSecretChar = (c: number) => isAlnum(c) || c === 95 || c === 126 || c === 46;

/** A `-p`/`--password` argument: a password-like value; the one-letter `-p` only after a `-u user` flag. */
function cliPassword(m: RegExpExecArray, text: string): boolean {
  if (!plausiblePassword(m[1])) return false;
  if (/^-p[ =]/i.test(m[0]) && !/\s-u\s/i.test(text.slice(Math.max(0, m.index - 80), m.index))) return false;
  return true;
}

export const KEY_FORMATS: KeyFormat[] = [
  // Cloud providers
  F('sec.aws_access_key', ['AKIA', 'ASIA', 'AGPA', 'AIDA', 'AROA', 'ANPA', 'ANVA', 'AIPA', 'A3T'], '(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|A3T[A-Z0-9])([0-9A-Z]{16})'),
  F('sec.google_api_key', ['AIza'], 'AIza([0-9A-Za-z_-]{35})'),
  F('sec.google_oauth_secret', ['GOCSPX-'], 'GOCSPX-([A-Za-z0-9_-]{28})'),
  F('sec.google_oauth_token', ['ya29.'], 'ya29\\.([0-9A-Za-z_-]{20,})', { minEntropy: 3 }),
  F('sec.google_refresh_token', ['1//0'], '1//0([0-9A-Za-z_-]{40,})', { minEntropy: 3 }),
  F('sec.azure_storage', ['AccountKey=', 'SharedAccessKey='], '(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,90}={0,2})', { valueOnly: true, open: true, minEntropy: 3.5 }),
  F('sec.azure_ad_secret', ['Q~'], '[A-Za-z0-9_~.]{3}\\dQ~([A-Za-z0-9_~.-]{31,34})', { anchor: 'infix', back: isAzureSecretChar, minEntropy: 3 }),
  F('sec.azure_sas', ['sig='], 'sig=([A-Za-z0-9%+/]{40,}(?:%3D|=)*)', { valueOnly: true, open: true, minEntropy: 3.5 }),
  F('sec.alibaba', ['LTAI'], 'LTAI([A-Za-z0-9]{20})', { minEntropy: 3 }),
  F('sec.tencent', ['AKID'], 'AKID([A-Za-z0-9]{32})', { minEntropy: 3 }),
  F('sec.scaleway', ['SCW'], 'SCW([A-Z0-9]{17})', { minEntropy: 3 }),
  F('sec.digitalocean', ['doo_v1_', 'dop_v1_', 'dor_v1_'], 'do[opr]_v1_([a-f0-9]{64})'),
  F('sec.heroku', ['HRKU-'], 'HRKU-([A-Za-z0-9_-]{60})'),
  F('sec.cloudflare_origin_ca', ['v1.0-'], 'v1\\.0-([a-f0-9]{24}-[a-f0-9]{146})'),
  // AI providers
  F('sec.anthropic', ['sk-ant-'], 'sk-ant-(?:api|admin|oat|sid)\\d{2}-([A-Za-z0-9_-]{20,})', { open: true }),
  F('sec.openai', ['sk-'], 'sk-(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,})', { minEntropy: 3 }),
  F('sec.elevenlabs', ['sk_'], 'sk_([a-f0-9]{48})', { minEntropy: 3 }),
  F('sec.huggingface', ['hf_', 'api_org_'], '(?:hf_|api_org_)([A-Za-z]{34,40})'),
  F('sec.groq', ['gsk_'], 'gsk_([A-Za-z0-9]{52})'),
  F('sec.replicate', ['r8_'], 'r8_([A-Za-z0-9]{37})'),
  F('sec.perplexity', ['pplx-'], 'pplx-([A-Za-z0-9]{48})'),
  F('sec.xai', ['xai-'], 'xai-([A-Za-z0-9]{70,90})'),
  F('sec.langsmith', ['lsv2_pt_', 'lsv2_sk_'], 'lsv2_(?:pt|sk)_([a-f0-9]{32}_[a-f0-9]{10})'),
  F('sec.pinecone', ['pcsk_'], 'pcsk_([A-Za-z0-9_]{50,})', { minEntropy: 3 }),
  F('sec.tavily', ['tvly-'], 'tvly-(?:dev-|prod-)?([A-Za-z0-9]{32})'),
  F('sec.jina', ['jina_'], 'jina_([a-f0-9]{32}[A-Za-z0-9]{28})'),
  // Source hosting, CI, package registries
  F('sec.github', ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'], '(?:gh[pousr]_([A-Za-z0-9]{36,})|github_pat_([A-Za-z0-9_]{22,}))'),
  F('sec.gitlab', ['glpat-', 'gldt-', 'glrt-', 'glptt-', 'glsoat-', 'glcbt-', 'glffct-', 'glimt-', 'glagent-', 'glft-', 'GR1348941'], '(?:glpat|gldt|glrt|glptt|glsoat|glcbt|glffct|glimt|glagent|glft|GR1348941)-?([A-Za-z0-9_-]{20,})'),
  F('sec.atlassian', ['ATATT3', 'ATCTT3'], 'AT[AC]TT3([A-Za-z0-9_=-]{150,})', { open: true }),
  F('sec.bitbucket', ['ATBB'], 'ATBB([A-Za-z0-9_=.-]{28,})', { minEntropy: 3 }),
  F('sec.dockerhub', ['dckr_pat_', 'dckr_oat_'], 'dckr_(?:pat|oat)_([A-Za-z0-9_-]{27,})', { minEntropy: 3 }),
  F('sec.npm', ['npm_'], 'npm_([A-Za-z0-9]{36})'),
  F('sec.pypi', ['pypi-AgEIcHlwaS5vcmc'], 'pypi-AgEIcHlwaS5vcmc([A-Za-z0-9_-]{50,})', { open: true }),
  F('sec.rubygems', ['rubygems_'], 'rubygems_([a-f0-9]{48})'),
  F('sec.nuget', ['oy2'], 'oy2([a-z0-9]{43})', { minEntropy: 3.5 }),
  F('sec.cratesio', ['cio'], 'cio([A-Za-z0-9]{32})', { minEntropy: 4 }),
  F('sec.clojars', ['CLOJARS_'], 'CLOJARS_([a-z0-9]{60})'),
  F('sec.sourcegraph', ['sgp_'], 'sgp_(?:local_|[a-f0-9]{16}_)?([a-f0-9]{40})'),
  F('sec.sonarqube', ['sqp_', 'squ_', 'sqa_'], 'sq[pua]_([a-f0-9]{40})'),
  F('sec.buildkite', ['bkua_'], 'bkua_([a-f0-9]{40})'),
  F('sec.jfrog', ['AKCp', 'cmVmdGtu'], '(?:AKCp([A-Za-z0-9]{69})|cmVmdGtu([A-Za-z0-9]{56}))'),
  F('sec.terraform_cloud', ['.atlasv1.'], '[A-Za-z0-9]{14}\\.atlasv1\\.([A-Za-z0-9_=-]{60,70})', { anchor: 'infix', back: isAlnum }),
  F('sec.vault', ['hvs.', 'hvb.', 'hvr.'], 'hv[sbr]\\.([A-Za-z0-9_-]{24,})'),
  F('sec.pulumi', ['pul-'], 'pul-([a-f0-9]{40})'),
  F('sec.octopus', ['API-'], 'API-([A-Z0-9]{26})', { minEntropy: 3 }),
  F('sec.prefect', ['pnu_'], 'pnu_([A-Za-z0-9]{36})'),
  F('sec.infracost', ['ico-'], 'ico-([A-Za-z0-9]{32})', { minEntropy: 3.5 }),
  F('sec.readme', ['rdme_'], 'rdme_([a-z0-9]{70})'),
  F('sec.tailscale', ['tskey-'], 'tskey-(?:api|auth|client|webhook|scim)-([A-Za-z0-9]+-[A-Za-z0-9]+)'),
  F('sec.flyio', ['fo1_', 'fm1r_', 'fm2_'], '(?:fo1_|fm1r_|fm2_)([A-Za-z0-9_+/=-]{40,})'),
  F('sec.netlify', ['nfp_'], 'nfp_([A-Za-z0-9]{36})'),
  F('sec.render', ['rnd_'], 'rnd_([A-Za-z0-9]{32})', { minEntropy: 3.5 }),
  F('sec.planetscale', ['pscale_tkn_', 'pscale_pw_', 'pscale_oauth_'], 'pscale_(?:tkn|pw|oauth)_([A-Za-z0-9_.=-]{32,64})'),
  // Service tokens may name their config: dp.st.<config>.<token>.
  F('sec.doppler', ['dp.pt.', 'dp.st.', 'dp.ct.', 'dp.sa.', 'dp.scim.', 'dp.audit.'], 'dp\\.(?:pt|st|ct|sa|scim|audit)\\.(?:[a-z0-9_-]{1,40}\\.)?([A-Za-z0-9]{40,44})'),
  F('sec.supabase', ['sbp_'], 'sbp_([a-f0-9]{40})'),
  F('sec.onepassword', ['ops_eyJ'], 'ops_(eyJ[A-Za-z0-9+/_=-]{50,})', { open: true }),
  // Communication, payment, SaaS
  F('sec.slack', ['xoxa-', 'xoxb-', 'xoxp-', 'xoxr-', 'xoxe-', 'xoxc-', 'xoxs-', 'xapp-'], '(?:xox[abprecs]|xapp)-((?:\\d+-)+[A-Za-z0-9-]{8,}|[A-Za-z0-9]{10,}(?:-[A-Za-z0-9]+)*)'),
  F('sec.slack_webhook', ['hooks.slack.com/'], 'hooks\\.slack\\.com/(?:services|workflows|triggers)/(T[A-Z0-9]+/[A-Za-z0-9]+/[A-Za-z0-9]{16,})', { valueOnly: true, open: true }),
  F('sec.discord_webhook', ['discord.com/api/webhooks/', 'discordapp.com/api/webhooks/'], 'discord(?:app)?\\.com/api/webhooks/\\d{17,20}/([A-Za-z0-9_-]{60,68})', { valueOnly: true, open: true }),
  F('sec.teams_webhook', ['webhook.office.com/'], 'webhook\\.office\\.com/webhookb2/([A-Za-z0-9@/-]{60,})', { valueOnly: true, open: true }),
  F('sec.zapier_webhook', ['hooks.zapier.com/'], 'hooks\\.zapier\\.com/hooks/catch/(\\d+/[a-z0-9]{5,})', { valueOnly: true, open: true }),
  F('sec.stripe', ['sk_live_', 'sk_test_', 'rk_live_', 'rk_test_', 'whsec_'], '(?:(?:sk|rk)_(?:live|test)_|whsec_)([A-Za-z0-9]{20,})'),
  F('sec.twilio', ['SK', 'AC'], '(?:SK|AC)([0-9a-f]{32})', { minEntropy: 3 }),
  F('sec.sendgrid', ['SG.'], 'SG\\.([A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43})'),
  F('sec.brevo', ['xkeysib-', 'xsmtpsib-'], 'x(?:keysib|smtpsib)-([a-f0-9]{64}-[A-Za-z0-9]{16})'),
  F('sec.mailgun', ['key-'], 'key-([0-9a-f]{32})', { minEntropy: 3 }),
  F('sec.mailchimp', ['-us'], '[0-9a-f]{32}-us\\d{1,2}', { anchor: 'infix', back: isHex }),
  F('sec.resend', ['re_'], 're_([A-Za-z0-9]{8}_[A-Za-z0-9]{24})', { minEntropy: 3 }),
  F('sec.telegram', [':AA'], '\\d{8,10}:(AA[A-Za-z0-9_-]{30,33})', { anchor: 'infix', back: isDigit }),
  F('sec.shopify', ['shpat_', 'shpss_', 'shpca_', 'shppa_'], 'shp(?:at|ss|ca|pa)_([a-fA-F0-9]{32})'),
  F('sec.square', ['sq0atp-', 'sq0csp-', 'EAAA'], '(?:sq0(?:atp|csp)-([A-Za-z0-9_-]{22,43})|EAAA([A-Za-z0-9_-]{60}))'),
  F('sec.facebook', ['EAACEdEose0cBA', 'EAAG', 'EAAB'], 'EAA(?:CEdEose0cBA|G|B)([A-Za-z0-9]{80,})'),
  F('sec.braintree', ['access_token$'], 'access_token\\$(?:production|sandbox)\\$([a-z0-9]{16}\\$[a-f0-9]{32})'),
  F('sec.plaid', ['access-'], 'access-(?:sandbox|development|production)-([a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})'),
  F('sec.flutterwave', ['FLWSECK-', 'FLWSECK_TEST-'], 'FLWSECK(?:_TEST)?-([a-f0-9]{32})-X'),
  F('sec.shippo', ['shippo_live_', 'shippo_test_'], 'shippo_(?:live|test)_([a-f0-9]{40})'),
  F('sec.easypost', ['EZAK', 'EZTK'], 'EZ[AT]K([a-z0-9]{54})'),
  F('sec.duffel', ['duffel_live_', 'duffel_test_'], 'duffel_(?:live|test)_([A-Za-z0-9_=-]{43})'),
  F('sec.linear', ['lin_api_', 'lin_oauth_'], 'lin_(?:api|oauth)_([A-Za-z0-9]{40})'),
  F('sec.notion', ['secret_', 'ntn_'], '(?:secret_|ntn_)([A-Za-z0-9]{43,46})'),
  F('sec.airtable', ['pat'], 'pat([A-Za-z0-9]{14}\\.[a-f0-9]{64})'),
  F('sec.contentful', ['CFPAT-'], 'CFPAT-([A-Za-z0-9_-]{43})'),
  F('sec.dynatrace', ['dt0c01.'], 'dt0c01\\.([A-Z0-9]{24}\\.[A-Z0-9]{64})'),
  F('sec.newrelic', ['NRAK-', 'NRII-', 'NRJS-', 'NRRA-', 'NRAA-', 'NRIQ-'], 'NR(?:AK|II|JS|RA|AA|IQ)-([A-Za-z0-9_-]{27,32})'),
  // New Relic's ingest license key: 40 characters ending in NRAL.
  F('sec.newrelic_license', ['NRAL'], '([a-z0-9]{36})NRAL', { anchor: 'infix', back: isAlnum, minEntropy: 3 }),
  // Azure DevOps personal access tokens (84 characters, AZDO at 77–80).
  F('sec.azure_devops_pat', ['AZDO'], '([A-Za-z0-9]{76})AZDO[A-Za-z0-9]{4}', { anchor: 'infix', back: isAlnum, minEntropy: 4 }),
  F('sec.grafana', ['glsa_', 'glc_', 'eyJrIjoi'], '(?:(?:glsa|glc)_([A-Za-z0-9_+/=-]{32,})|eyJrIjoi([A-Za-z0-9+/]{40,}={0,2}))'),
  F('sec.sentry_token', ['sntrys_', 'sntryu_'], 'sntry(?:s_(eyJ[A-Za-z0-9+/_=-]{60,})|u_([a-f0-9]{64}))', { open: true }),
  F('sec.figma', ['figd_'], 'figd_([A-Za-z0-9_-]{40,})'),
  F('sec.postman', ['PMAK-'], 'PMAK-([a-f0-9]{24}-[a-f0-9]{34})'),
  F('sec.databricks', ['dapi'], 'dapi([a-f0-9]{32})(?:-\\d)?'),
  F('sec.groq_like_adafruit', ['aio_'], 'aio_([A-Za-z0-9]{28})', { minEntropy: 3.5 }),
  F('sec.typeform', ['tfp_'], 'tfp_([A-Za-z0-9_.=-]{59})'),
  F('sec.mapbox', ['sk.eyJ'], 'sk\\.(eyJ[A-Za-z0-9_-]{20,}\\.[A-Za-z0-9_-]{20,})'),
  F('sec.dropbox', ['sl.'], 'sl\\.([A-Za-z0-9_-]{130,})', { open: true, minEntropy: 4 }),
  F('sec.age', ['AGE-SECRET-KEY-1'], 'AGE-SECRET-KEY-1([QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{20,58})', { open: true }),
  F('sec.vault_unseal', ['Unseal Key', 'unseal '], '(?:Unseal Key(?: \\d+)?:|unseal) ?([A-Za-z0-9+/]{40,}={0,2})', { valueOnly: true, minEntropy: 4 }),
  // Passwords as arguments: `-Password VMware1!`, `--password=…`, `-u admin -p …`, `NetworkCredential("user", "…")`.
  F('sec.cli_password', ['--', '-p', '-P'], '--?(?:p|pass|password|pwd)(?:[ =]+)"?([^\\s"\']{6,64})"?', { valueOnly: true, open: true, ci: true, check: cliPassword }),
  F('sec.cli_token', ['--'], '--(?:token|api-key|apikey|api_key|secret|access-token|auth-token|client-secret)(?:[ =]+)"?([^\\s"\']{12,200})"?', { valueOnly: true, open: true, ci: true, check: (m) => plausibleKey(m[1]) }),
  F('sec.network_credential', ['NetworkCredential('], 'NetworkCredential\\(\\s*"[^"\\n]{1,64}"\\s*,\\s*"([^"\\n]{6,64})"', { valueOnly: true, open: true, check: (m) => plausiblePassword(m[1]) }),
  F('sec.okta_ssws', ['SSWS '], 'SSWS ([A-Za-z0-9_-]{40,42})', { valueOnly: true, minEntropy: 3 }),
  F('sec.salesforce', ['00D'], '00D[A-Za-z0-9]{12,15}!([A-Za-z0-9._]{80,})', { open: true }),
  F('sec.hubspot', ['pat-'], 'pat-(?:na|eu|ap)\\d-([a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})'),
  F('sec.segment', ['sgp_'], 'sgp_([A-Za-z0-9]{64})'),
  F('sec.twitter_bearer', ['AAAAAAAAAAAAAAAAAAAAA'], 'A{21,23}([A-Za-z0-9%]{80,})'),
  F('sec.teamcity', ['eyJ0eXAiOiAiVENWMiJ9'], 'eyJ0eXAiOiAiVENWMiJ9\\.([A-Za-z0-9_-]{36}\\.[A-Za-z0-9_-]{48})'),
  F('sec.dependency_track', ['odt_'], 'odt_([A-Za-z0-9]{32})', { minEntropy: 3.5 }),
  F('sec.firecrawl', ['fc-'], 'fc-([a-f0-9]{32})', { minEntropy: 3 }),
  F('sec.frameio', ['fio-u-'], 'fio-u-([A-Za-z0-9_=-]{64})'),
  F('sec.circleci', ['CCIPAT_'], 'CCIPAT_([A-Za-z0-9]{22}_[a-f0-9]{40})'),
  F('sec.firebase_fcm', ['AAAA'], 'AAAA[A-Za-z0-9_-]{7}:([A-Za-z0-9_-]{140})'),
  F('sec.slack_config', ['xoxe.'], 'xoxe\\.xox[bp]-\\d-([A-Za-z0-9]{150,})', { open: true }),
  F('sec.netrc', ['machine '], 'machine\\s+\\S{1,100}\\s+login\\s+\\S{1,100}\\s+password\\s+(\\S{4,128})', { valueOnly: true, open: true, check: (m) => !isPlaceholder(m[1]) && !/^[$%{<]/.test(m[1]) }),
  // Ported from gitleaks' rule set (MIT, config/gitleaks.toml): formats with a fixed literal the list above lacked.
  F('sec.onepassword_secret_key', ['A3-'], 'A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-([A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})'),
  F('sec.adobe_client_secret', ['p8e-'], 'p8e-([A-Za-z0-9]{32})', { minEntropy: 3 }),
  F('sec.aws_bedrock', ['ABSK', 'bedrock-api-key-'], '(?:ABSK([A-Za-z0-9+/]{109,269}={0,2})|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t([A-Za-z0-9+/=%]{20,}))', { open: true }),
  F('sec.facebook_page', ['EAAM', 'EAAC'], 'EAA[MC]([A-Za-z0-9]{100,})'),
  F('sec.harness', ['pat.', 'sat.'], '(?:pat|sat)\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9]{24}\\.([A-Za-z0-9]{20})'),
  F('sec.openshift', ['sha256~'], 'sha256~([A-Za-z0-9_-]{43})'),
  F('sec.scalingo', ['tk-us-'], 'tk-us-([A-Za-z0-9_-]{48})'),
  F('sec.settlemint', ['sm_aat_', 'sm_pat_', 'sm_sat_'], 'sm_[aps]at_([A-Za-z0-9]{16})', { minEntropy: 3 }),
  F('sec.gitlab_oauth', ['gloas-', '_gitlab_session='], '(?:gloas-([A-Za-z0-9_-]{64})|_gitlab_session=([0-9a-z]{32}))'),
  F('sec.intra42', ['s-s4t2'], 's-s4t2(?:ud|af)-([a-f0-9]{64})'),
  F('sec.teams_webhook_legacy', ['outlook.office.com/webhook/'], 'outlook\\.office\\.com/webhook/([a-f0-9-]{36}@[a-f0-9-]{36}/IncomingWebhook/[a-f0-9]{32}/[a-f0-9-]{36})', { valueOnly: true, open: true }),
  F('sec.sidekiq', ['BUNDLE_ENTERPRISE__CONTRIBSYS__COM', 'BUNDLE_GEMS__CONTRIBSYS__COM'], 'BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM[ \\t]*[=:][ \\t]*["\']?([a-f0-9]{8}:[a-f0-9]{8})', { valueOnly: true, open: true }),
  // `curl -u user:password` (gitleaks' curl-auth-user, reduced to the one-line form).
  F('sec.curl_user', ['-u ', '--user '], '-(?:u|-user) +["\']?[^\\s:"\'$]{1,64}:([^\\s"\'@]{6,64})["\']?', { valueOnly: true, open: true, check: (m, text) => /\bcurl\b/.test(text.slice(Math.max(0, m.index - 200), m.index)) && plausiblePassword(m[1]) }),
  // Password hashes in hashcat's documented formats: Kerberos AS-REP / TGS-REP, Cisco type 8 / 9.
  F('sec.kerberos_hash', ['$krb5asrep$', '$krb5tgs$'], '\\$krb5(?:asrep|tgs)\\$\\d+\\$[^$\\s]{0,200}\\$?([a-f0-9]{32}\\$[a-f0-9]{64,})', { open: true }),
  F('sec.cisco_hash', ['$8$', '$9$'], '\\$[89]\\$[./A-Za-z0-9]{14}\\$([./A-Za-z0-9]{43})', { open: true }),
  // Generic shapes
  F('sec.private_key', ['-----BEGIN'], '-----BEGIN[ A-Z]{0,20} PRIVATE KEY(?: BLOCK)?-----()', { open: true }),
  F('sec.putty_key', ['PuTTY-User-Key-File-'], 'PuTTY-User-Key-File-\\d: ()', { open: true }),
  F('sec.password_hash', ['$2a$', '$2b$', '$2y$', '$1$', '$apr1$', '$5$', '$6$', '$argon2'], '(?:\\$2[aby]\\$\\d\\d\\$([./A-Za-z0-9]{53})|\\$(?:1|apr1)\\$[./A-Za-z0-9]{1,8}\\$([./A-Za-z0-9]{22})|\\$[56]\\$(?:rounds=\\d+\\$)?[./A-Za-z0-9]{1,16}\\$([./A-Za-z0-9]{43,86})|\\$argon2(?:id|i|d)\\$v=\\d+\\$m=\\d+,t=\\d+,p=\\d+\\$[A-Za-z0-9+/]+\\$([A-Za-z0-9+/]{20,}))', { open: true }),
  F('sec.jwt', ['eyJ'], 'eyJ[A-Za-z0-9_-]{8,}\\.eyJ([A-Za-z0-9_-]{8,})\\.[A-Za-z0-9_-]{8,}', { open: true }),
  F('sec.bearer', ['Bearer '], 'Bearer\\s+((?=[A-Za-z0-9._~+/-]*\\d)(?=[A-Za-z0-9._~+/-]*[A-Za-z])[A-Za-z0-9._~+/-]{24,}=*)', { valueOnly: true, open: true, minEntropy: 3 }),
];
