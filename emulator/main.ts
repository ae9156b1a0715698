/** `npm run emulator`: the provider emulator on PORT (default 8090) and HOST (default 127.0.0.1). */
import { startEmulator } from './server';

async function main() {
  const port = Number(process.env.PORT ?? 8090);
  const host = process.env.HOST ?? '127.0.0.1';
  const emu = await startEmulator({ port, host });
  process.stdout.write(`provider emulator listening on ${emu.url}\n`);
  const stop = () => {
    void emu.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  process.stderr.write(`emulator failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
