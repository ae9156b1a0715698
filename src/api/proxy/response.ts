/** A proxy answer written to the response: a whole reply, or a stream through a sink over the response. */
import type { ParameterizedContext } from 'koa';
import type { Outgoing } from '../../proxy/reply';
import type { StreamSink } from '../../proxy/sink';

export function send(ctx: ParameterizedContext, { reply, ids = {} }: Outgoing): void {
  ctx.status = reply.status;
  for (const [k, v] of Object.entries(reply.headers)) ctx.set(k, v);
  ctx.body = reply.body;
  if (reply.headers['content-type']) ctx.type = reply.headers['content-type'];
  for (const [k, v] of Object.entries(ids)) ctx.set(k, v);
}

/** The response as a stream sink: once opened, Koa no longer answers and the bytes go straight out. */
export function streamSink(ctx: ParameterizedContext): StreamSink {
  const out = ctx.res;
  return {
    open(status, headers) {
      ctx.respond = false;
      out.writeHead(status, headers);
      out.flushHeaders();
    },
    write(chunk) {
      if (!out.destroyed) out.write(chunk);
    },
    end: () => out.end(),
    destroy: () => out.destroy(),
    onClientGone(fn) {
      const onClose = () => {
        if (!out.writableFinished) fn();
      };
      out.on('close', onClose);
      return () => out.off('close', onClose);
    },
    get started() {
      return ctx.respond === false || ctx.headerSent;
    },
  };
}
