/**
 * Where a proxy call's streamed answer goes. The HTTP side implements it over its response, so the
 * proxy pipes a provider's stream without knowing the server it runs in.
 */
export interface StreamSink {
  /** Sends the status and headers at once; the body follows through `write`. */
  open(status: number, headers: Record<string, string>): void;
  /** Writes a chunk, unless the client is already gone. */
  write(chunk: Buffer): void;
  /** Ends the response normally. */
  end(): void;
  /** Cuts the response short: the client sees the stream break, as it would from the provider. */
  destroy(): void;
  /** Calls `fn` when the client goes away before the response finished; returns how to stop listening. */
  onClientGone(fn: () => void): () => void;
  /** The response has started (a stream is open), so no other answer can be sent. */
  readonly started: boolean;
}
