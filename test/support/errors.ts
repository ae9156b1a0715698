/** The spec's error body, with the request id every answer carries. */
export const expectError = (res: { status: number; json: any; headers: Headers }, status: number, code: string) => {
  expect(res.status).toBe(status);
  expect(res.json).toEqual({ error: { code, message: expect.any(String), details: expect.any(Object) } });
  expect(res.headers.get('x-request-id')).toBeTruthy();
};
