/**
 * A bucket of its own on the run's S3-compatible server (test/support/global-setup.ts) for a test
 * file that runs the archive store on S3: the ARCHIVE_S3_ variables that select it, and a client to
 * look into the bucket as an operator would.
 */
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

export interface TestBucket {
  bucket: string;
  prefix: string;
  /** The ARCHIVE_S3_ variables of a Tollgate whose archive store is this bucket. */
  env: Record<string, string>;
  client: S3Client;
  /** Every key under the prefix (without it). */
  keys(): Promise<string[]>;
  read(key: string): Promise<Buffer>;
  write(key: string, body: Buffer): Promise<void>;
  remove(key: string): Promise<void>;
  /** Open multipart uploads under the prefix: the keys of uploads never completed nor aborted. */
  openUploads(): Promise<string[]>;
}

export async function createTestBucket(): Promise<TestBucket> {
  const endpoint = process.env.TEST_S3_ENDPOINT;
  if (!endpoint) throw new Error(process.env.TEST_S3_UNAVAILABLE ?? 'TEST_S3_ENDPOINT is not set: run the tests with jest (its global setup starts the S3 server)');
  const bucket = `tollgate-test-${randomUUID().slice(0, 13)}`;
  const prefix = 'tollgate/';
  const env = {
    ARCHIVE_S3_BUCKET: bucket,
    ARCHIVE_S3_ENDPOINT: endpoint,
    ARCHIVE_S3_REGION: process.env.TEST_S3_REGION!,
    ARCHIVE_S3_ACCESS_KEY_ID: process.env.TEST_S3_ACCESS_KEY_ID!,
    ARCHIVE_S3_SECRET_ACCESS_KEY: process.env.TEST_S3_SECRET_ACCESS_KEY!,
    ARCHIVE_S3_PREFIX: prefix,
    ARCHIVE_S3_FORCE_PATH_STYLE: 'true',
  };
  const client = new S3Client({
    endpoint,
    region: env.ARCHIVE_S3_REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: env.ARCHIVE_S3_ACCESS_KEY_ID, secretAccessKey: env.ARCHIVE_S3_SECRET_ACCESS_KEY },
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    bucket,
    prefix,
    env,
    client,
    async keys() {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const res = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        for (const o of res.Contents ?? []) out.push(o.Key!.slice(prefix.length));
        token = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (token);
      return out.sort();
    },
    async read(key) {
      const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: prefix + key }));
      return Buffer.from(await res.Body!.transformToByteArray());
    },
    async write(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: prefix + key, Body: body }));
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: prefix + key }));
    },
    async openUploads() {
      const res = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
      return (res.Uploads ?? []).map((u) => u.Key!.slice(prefix.length));
    },
  };
}
