/** Synthetic secrets: random bodies in documented key formats, inside the sentences that carry them. */
import { makeCase, type EvalCase } from './cases';
import { AN, B64, DIG, HEX, LO, UP, URLSAFE, type Rng } from './rng';

// Key formats as documented by the providers (and as catalogued by trufflehog's detectors); the values
// are random, never real keys.
function secretFormats(r: Rng): Array<[string, () => string]> {
  const c = r.chars;
  return [
    ['aws_access_key', () => r.pick(['AKIA', 'ASIA']) + c(UP + '234567', 16)],
    ['aws_secret_labeled', () => `aws_secret_access_key = ${c(B64, 40)}`],
    ['openai_project', () => `sk-proj-${c(URLSAFE, 48)}T3BlbkFJ${c(URLSAFE, 48)}`],
    ['openai_legacy', () => `sk-${c(AN, 20)}T3BlbkFJ${c(AN, 20)}`],
    ['anthropic', () => `sk-ant-api03-${c(URLSAFE, 93)}AA`],
    ['google_api', () => `AIza${c(URLSAFE, 35)}`],
    ['github_classic', () => `${r.pick(['ghp', 'gho', 'ghu', 'ghs', 'ghr'])}_${c(AN, 36)}`],
    ['github_fine', () => `github_pat_${c(AN, 22)}_${c(AN, 59)}`],
    ['gitlab', () => `glpat-${c(URLSAFE, 20)}`],
    ['slack_token', () => `${r.pick(['xoxb', 'xoxp', 'xoxa', 'xoxr'])}-${c(DIG, 11)}-${c(DIG, 12)}-${c(AN, 24)}`],
    ['slack_webhook', () => `https://hooks.slack.com/services/T${c(UP + DIG, 8)}/B${c(UP + DIG, 10)}/${c(AN, 24)}`],
    ['stripe_live', () => `${r.pick(['sk', 'rk'])}_live_${c(AN, 24 + r.int(76))}`],
    ['stripe_test', () => `${r.pick(['sk', 'rk'])}_test_${c(AN, 24 + r.int(76))}`],
    ['stripe_restricted_51', () => `rk_live_51${c(AN, 97)}`],
    ['twilio_api_key', () => `SK${c(HEX, 32)}`],
    ['sendgrid', () => `SG.${c(URLSAFE, 22)}.${c(URLSAFE, 43)}`],
    ['mailgun', () => `key-${c(HEX, 32)}`],
    ['npm', () => `npm_${c(AN, 36)}`],
    ['pypi', () => `pypi-AgEIcHlwaS5vcmc${c(URLSAFE, 70)}`],
    ['huggingface', () => `hf_${c(UP + LO, 34)}`],
    ['telegram_bot', () => `${1 + r.int(9)}${c(DIG, 8)}:AA${c(URLSAFE, 33)}`],
    ['shopify', () => `${r.pick(['shpat', 'shpss', 'shpca', 'shppa'])}_${c(HEX, 32)}`],
    ['digitalocean', () => `${r.pick(['dop', 'doo', 'dor'])}_v1_${c(HEX, 64)}`],
    ['databricks', () => `dapi${c(HEX, 32)}`],
    ['doppler', () => `dp.pt.${c(AN, 43)}`],
    ['postman', () => `PMAK-${c(HEX, 24)}-${c(HEX, 34)}`],
    ['linear', () => `lin_api_${c(AN, 40)}`],
    ['notion', () => `${r.pick(['secret_', 'ntn_'])}${c(AN, 43)}`],
    ['groq', () => `gsk_${c(AN, 52)}`],
    ['replicate', () => `r8_${c(AN, 37)}`],
    ['perplexity', () => `pplx-${c(AN, 48)}`],
    ['xai', () => `xai-${c(AN, 80)}`],
    ['atlassian', () => `ATATT3xFfGF0${c(URLSAFE, 180)}=${c(HEX.toUpperCase(), 8)}`],
    ['vault', () => `hvs.${c(URLSAFE, 24 + r.int(70))}`],
    ['newrelic', () => `NRAK-${c(UP + DIG, 27)}`],
    ['grafana', () => `glsa_${c(AN, 32)}_${c(HEX, 8)}`],
    ['figma', () => `figd_${c(URLSAFE, 40)}`],
    ['supabase', () => `sbp_${c(HEX, 40)}`],
    ['pulumi', () => `pul-${c(HEX, 40)}`],
    ['square', () => `${r.pick(['sq0atp-', 'sq0csp-'])}${c(URLSAFE, 22)}`],
    ['sentry_dsn', () => `https://${c(HEX, 32)}@o${c(DIG, 6)}.ingest.sentry.io/${c(DIG, 7)}`],
    ['discord_webhook', () => `https://discord.com/api/webhooks/${c(DIG, 18)}/${c(URLSAFE, 68)}`],
    ['azure_storage', () => `DefaultEndpointsProtocol=https;AccountName=${c(LO, 10)};AccountKey=${c(B64, 86)}==;EndpointSuffix=core.windows.net`],
    ['postgres_url', () => `postgres://${c(LO, 6)}:${c(AN, 16)}@db.${c(LO, 8)}.internal:5432/${c(LO, 6)}`],
    ['mongodb_url', () => `mongodb+srv://${c(LO, 6)}:${c(AN, 14)}@cluster0.${c(LO, 5)}.mongodb.net/app`],
    ['private_key', () => `-----BEGIN ${r.pick(['RSA ', 'EC ', 'OPENSSH ', ''])}PRIVATE KEY-----\n${c(B64, 64)}\n${c(B64, 64)}\n-----END PRIVATE KEY-----`],
    ['jwt', () => `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ${c(URLSAFE, 60)}.${c(URLSAFE, 43)}`],
    ['generic_password', () => `${r.pick(['DB_PASSWORD', 'password', 'SMTP_PASS', 'api_secret'])}=${c(AN + '!#%', 18)}`],
    ['cohere_labeled', () => `COHERE_API_KEY=${c(AN, 40)}`],
    ['mistral_labeled', () => `MISTRAL_API_KEY="${c(AN, 32)}"`],
  ];
}

export const SECRET_CONTEXTS = [
  (k: string) => `Here is my key: ${k}. Why does the API return 401?`,
  (k: string) => `export API_KEY=${k}\nnode index.js fails with "unauthorized", any idea?`,
  (k: string) => `My config:\n\`\`\`\nclient = Client(api_key="${k}")\n\`\`\`\nCan you refactor this into a class?`,
  (k: string) => `Can you check whether this token is still valid (${k})?`,
  (k: string) => `{"service": "billing", "token": "${k}", "retries": 3}`,
  (k: string) => `The deploy log printed ${k}; is that bad?`,
  (k: string) => `use ${k}, then call the endpoint`,
  (k: string) => `Please debug: curl -H "Authorization: Bearer ${k}" https://api.example.com/v1/items`,
  (k: string) => `${k}`,
  (k: string) => `key=${k};`,
];

export function generatedSecrets(r: Rng): EvalCase[] {
  const out: EvalCase[] = [];
  for (const [kind, gen] of secretFormats(r)) {
    for (let i = 0; i < 8; i++) {
      const text = r.pick(SECRET_CONTEXTS)(gen());
      out.push(makeCase('secret', 'synthetic-secrets', text, { kind }));
    }
  }
  return out;
}
