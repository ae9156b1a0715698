/**
 * The public repositories the firewall's evaluation set and training data are read from, each pinned
 * to one commit, so `scripts/firewall-eval-build.ts` rebuilds `public.json` byte for byte (its SHA-256
 * is printed and recorded in test/fixtures/firewall-eval/SOURCES.md).
 *
 * Snapshots are git directories at `<mirror>/<owner>+<name>/repo` (FIREWALL_EVAL_MIRROR, default
 * /work/.mirror). Elsewhere, a clone serves: `git clone --bare https://github.com/<owner>/<name>
 * <mirror>/<owner>+<name>/repo` (files are read at the pinned commit, never at HEAD).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const MIRROR = process.env.FIREWALL_EVAL_MIRROR ?? '/work/.mirror';

/** owner+name → pinned commit. */
export const PINS: Record<string, string> = {
  'Neural-alchemy+promptshield': 'dfdc85a5d6c420ef8e00151acbdffa44c5b7ecbe',
  'mik0w+pallms': 'bfedec0fa6cb8d44a73c730a02eeaac36aefd198',
  'sherdencooper+GPTFuzz': '1eddeb565740ae311b5f4950492b011a6f866fe7',
  'JailbreakBench+artifacts': '909e68c01d94222b8ad2e397a017e2e12e2adb73',
  'yizhongw+self-instruct': '0b26ccaa415992100fa32df62d41b994cf928e23',
  'openai+grade-school-math': '3101c7d5072418e28b9008a6636bde82a006892c',
  'openai+human-eval': '6d43fb980f9fee3c892a914eda09951f772ad10d',
  'danielmiessler+fabric': '272f04dd3278f99bee49e94a7747b54708745a5d',
  '0xeb+TheBigPromptLibrary': '655667d2dd43bad65f189ec49d8606bf3e8d967e',
  'meta-llama+PurpleLlama': '4be64c3a24442b51c76175e6ec67722cc3f5fe38',
  'leolee99+InjecGuard': '588f555cbc2d592b3fbc9b6f462d844b8bcddb4d',
  'praetorian-inc+noseyparker': '2e6e7f36ce36619852532bbe698d8cb7a26d2da7',
  'LouisShark+chatgpt_system_prompt': '37a95e8a062d78424546e5acfbe0f95b3de79e2a',
  'whylabs+langkit': '5d6cab1e2ff32181ba5c514aaa2a4473421dc413',
  'arthurdejong+python-stdnum': '006192e59be8ed6e08fd680256868a6c31eb2ba9',
};

/**
 * The unseen public set (scripts/lib/firewall-eval/public-unseen.ts): repositories reserved for an
 * independent check, never read while writing, tuning or training the detectors.
 */
export const UNSEEN_PINS: Record<string, string> = {
  'protectai+llm-guard': '53af270c69316ed82cb71ba7b19d11b55bda3151',
  'NVIDIA+garak': 'cafbe992780df70015de7295ca026b70c4629ada',
  'microsoft+BIPIA': '1a2a91da6bb12838e05d1b2e54d98e2f37b835f3',
  'f+awesome-chatgpt-prompts': 'b9e72de6227315150baeb410bfde4bb459383e0f',
  'Yelp+detect-secrets': '5e141933554a0b74e7341841f318be21e895339c',
};
const pinOf = (repo: string): string | undefined => PINS[repo] ?? UNSEEN_PINS[repo];

const dirOf = (repo: string) => path.join(MIRROR, repo, 'repo');

/** Whether the snapshot of `repo` is here and holds its pinned commit. */
export function available(repo: string): boolean {
  const commit = pinOf(repo);
  if (!commit || !fs.existsSync(dirOf(repo))) return false;
  try {
    execFileSync('git', ['-C', dirOf(repo), 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function show(repo: string, spec: string): Buffer | null {
  if (!available(repo)) return null;
  try {
    return execFileSync('git', ['-C', dirOf(repo), 'show', `${pinOf(repo)}:${spec}`], { maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

/** A file of `repo` at its pinned commit, or null (snapshot or file missing). */
export const git = (repo: string, spec: string): string | null => show(repo, spec)?.toString('utf8') ?? null;
export const gitBuf = show;

/** The files under `under` of `repo` at its pinned commit (sorted, as git lists them). */
export function gitLs(repo: string, under: string): string[] {
  if (!available(repo)) return [];
  return execFileSync('git', ['-C', dirOf(repo), '-c', 'core.quotePath=false', 'ls-tree', '-r', '--name-only', pinOf(repo) as string, under], { maxBuffer: 64 * 1024 * 1024 })
    .toString('utf8')
    .split('\n')
    .filter(Boolean);
}

/** The pinned repositories whose snapshot is missing (the build says which, and how to get them). */
export const missingSnapshots = (pins: Record<string, string> = PINS): string[] => Object.keys(pins).filter((r) => !available(r));
