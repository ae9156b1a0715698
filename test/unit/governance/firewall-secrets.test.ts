/** The secret detector's one-pass scan: literal formats, infix formats, labelled values, URL passwords, arguments. */
import { scanSecrets } from '../../../src/governance/firewall/secret-scan';
import { labelClass } from '../../../src/governance/firewall/secret-labels';
import { Redactor } from '../../../src/governance/firewall/redact';

const ids = (t: string) => scanSecrets(t).map((h) => h.id);
const masked = (t: string) => new Redactor(['secret'], {}).text(t);
const rnd = 'q8Zr4TbW2mKx9LpV7nHc3JfD6sGy1AeU5oRi0wQz';
const hex = '3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a';

describe('secret scan: formats by literal prefix', () => {
  it('finds vendor tokens by their documented prefixes', () => {
    expect(ids(`docker login -u me -p dckr_pat_${rnd.slice(0, 27)}`)).toContain('sec.dockerhub');
    expect(ids(`tvly-${rnd.slice(0, 32)}`)).toEqual(['sec.tavily']);
    expect(ids(`token sgp_${hex.slice(0, 16)}_${hex.slice(0, 40)} here`)).toEqual(['sec.sourcegraph']);
    expect(ids(`rubygems_${hex.slice(0, 48)}`)).toEqual(['sec.rubygems']);
    expect(ids(`AGE-SECRET-KEY-1${'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L'.repeat(2).slice(0, 58)}`)).toEqual(['sec.age']);
    expect(ids(`$6$rounds=5000$GX7BopJZJxPc/KEK$${rnd}${rnd.slice(0, 6)}`)).toEqual(['sec.password_hash']);
    expect(ids(`use GOCSPX-${rnd.slice(0, 28)} now`)).toEqual(['sec.google_oauth_secret']);
  });

  it('finds formats by an infix and walks back to the token start', () => {
    expect(ids(`MAILCHIMP_API='${hex.slice(0, 32)}-us13'`)).toContain('sec.mailchimp');
    expect(ids(`bot 4839574813:AA${rnd.slice(0, 33)} ok`)).toEqual(['sec.telegram']);
    expect(ids(`secret abc8Q~${rnd.slice(0, 34)} ok`)).toEqual(['sec.azure_ad_secret']);
  });

  it('needs the token boundary and the exact body: no match inside a word or on a short body', () => {
    expect(ids(`xtvly-${rnd.slice(0, 32)}`)).toEqual([]);
    expect(ids('dckr_pat_short')).toEqual([]);
    expect(ids(`${hex.slice(0, 31)}-us13`)).toEqual([]);
    expect(ids('Call 12345678:AAbc for details')).toEqual([]);
  });

  it('rejects placeholders in a format body', () => {
    expect(ids(`tvly-${'x'.repeat(32)}`)).toEqual([]);
    expect(ids(`dckr_pat_${'X'.repeat(27)}`)).toEqual([]);
  });
});

describe('secret scan: labelled values', () => {
  it('classifies labels at word boundaries', () => {
    expect(labelClass('DB_PASSWORD')).toBe('password');
    expect(labelClass('smtpPass')).toBe('password');
    expect(labelClass('bypass')).toBeNull();
    expect(labelClass('compass')).toBeNull();
    expect(labelClass('COHERE_API_KEY')).toBe('key');
    expect(labelClass('client_secret')).toBe('key');
    expect(labelClass('public_key')).toBeNull();
    expect(labelClass('monkey')).toBeNull();
    expect(labelClass('key')).toBe('bare');
  });

  it('finds a quoted or unquoted random value after a credential label', () => {
    expect(ids('password = "super$ecret1"')).toEqual(['sec.labeled']);
    expect(ids(`"client_secret": "${rnd.slice(0, 24)}"`)).toEqual(['sec.labeled']);
    expect(ids(`SMTP_PASS=Tr0ub4dor&3`)).toEqual(['sec.labeled']);
    expect(ids(`PrivateKey = ${rnd}=`)).toEqual(['sec.labeled']);
    expect(ids(`:password => '4ian1234',`)).toEqual(['sec.labeled']);
  });

  it('ignores references, calls, plain words, placeholders and low-entropy values', () => {
    for (const t of [
      'password = os.getenv("DB_PASSWORD")',
      'password = getPassword()',
      'password: $DB_PASSWORD',
      'password = config.db.password',
      'password=secret',
      'password: "YOUR_PASSWORD_HERE"',
      'api_key: "<your-key>"',
      `public_key = "${rnd}"`,
      '.DocSearch-Button-Key:first-child:after { content: "x" }',
      'if (password == other) return;',
      'key: value-of-the-thing',
    ]) {
      expect({ t, ids: ids(t) }).toEqual({ t, ids: [] });
    }
  });

  it('masks the value only, the label stays readable', () => {
    expect(masked('DB_PASSWORD="Tr0ub4dor&3x"\nHOST=db')).toBe('DB_PASSWORD="[REDACTED_SECRET_1]"\nHOST=db');
  });
});

describe('secret scan: URLs and arguments', () => {
  it('finds the password of any URL with user info, not a placeholder or the user name', () => {
    expect(masked('git clone https://me:Hx7-kd93Lq@git.example.net/repo.git')).toBe('git clone https://me:[REDACTED_SECRET_1]@git.example.net/repo.git');
    expect(masked(`mongodb+srv://app:bria@pass135!@cluster0.mongodb.net/test`)).toBe('mongodb+srv://app:[REDACTED_SECRET_1]@cluster0.mongodb.net/test');
    expect(ids('postgres://user:password@localhost/db')).toEqual([]);
    expect(ids('postgres://postgres:postgres@localhost/db')).toEqual([]);
    expect(ids('see https://example.com/a:b@c')).toEqual([]);
  });

  it('finds a Sentry DSN key', () => {
    expect(ids(`https://${hex.slice(0, 32)}@o1.ingest.sentry.io/42`)).toEqual(['sec.sentry_dsn']);
  });

  it('finds passwords and tokens given as arguments; -p only after -u', () => {
    expect(ids('Connect-VIServer -Server 10.0.0.5 -User admin -Password VMware1!')).toEqual(['sec.cli_password']);
    expect(ids('psexec \\\\host -u Administrator -p S3cret!x cmd')).toEqual(['sec.cli_password']);
    expect(ids('mkdir -p build2024/x-y')).toEqual([]);
    expect(ids('ssh -p 2222x host')).toEqual([]);
    expect(ids(`kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef`)).toEqual(['sec.cli_token']);
    expect(ids('new NetworkCredential("svc", "AP7JaG9ToerxBc6gWP5LcU2CNpb")')).toEqual(['sec.network_credential']);
  });
});
