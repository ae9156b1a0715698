import { Middleware } from 'koa';
import { newId } from '../../ids';

const INBOUND = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries `x-request-id`: the caller's, when well-formed, else a new one. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const inbound = ctx.get('x-request-id');
    const id = INBOUND.test(inbound) ? inbound : newId('req');
    ctx.state.requestId = id;
    ctx.set('x-request-id', id);
    await next();
  };
}
