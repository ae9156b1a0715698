/**
 * The archive store in an S3-compatible bucket (ARCHIVE_S3_*), through the AWS SDK v3. Writes go
 * through lib-storage's Upload: a multipart upload of bounded parts read from the stream as they
 * fill (one PutObject for an object smaller than a part), so the object is never whole in memory
 * and appears only when the upload completes. An upload aborted by an error is aborted on the
 * server; one whose process was killed stays open there until the next write of the same key
 * aborts it (or the bucket's AbortIncompleteMultipartUpload lifecycle rule does).
 */
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { S3ArchiveStoreConfig } from '../config';
import { ArchiveObjectMissing, checkKey, type ArchiveStore } from './store';

/** Bytes per part: S3's smallest part; with QUEUE_SIZE parts in flight, at most ~10 MiB of a write is in memory. */
const PART_SIZE = 5 * 1024 * 1024;
const QUEUE_SIZE = 2;

export class S3ArchiveStore implements ArchiveStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(c: S3ArchiveStoreConfig) {
    this.bucket = c.bucket;
    this.prefix = c.prefix;
    this.client = new S3Client({
      region: c.region,
      endpoint: c.endpoint,
      forcePathStyle: c.forcePathStyle,
      // Without both, the SDK's own chain (environment, profile, instance role) answers.
      credentials: c.accessKeyId && c.secretAccessKey ? { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey } : undefined,
    });
  }

  private key(key: string): string {
    return this.prefix + checkKey(key);
  }

  locate(key: string): string {
    return `s3://${this.bucket}/${this.key(key)}`;
  }

  async put(key: string, body: Readable | AsyncIterable<Uint8Array>): Promise<{ bytes: number }> {
    const Key = this.key(key);
    const started = new Date();
    let bytes = 0;
    async function* counted() {
      for await (const chunk of body as AsyncIterable<Uint8Array>) {
        bytes += chunk.length;
        yield chunk;
      }
    }
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key, Body: Readable.from(counted()) },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    await upload.done();
    // Housekeeping only: a store that refuses the listing keeps such leftovers for its lifecycle rule.
    await this.abortStaleUploads(Key, started).catch(() => undefined);
    return { bytes };
  }

  /** Aborts the open multipart uploads of `Key` begun before `before`: those of writers killed mid-upload. */
  private async abortStaleUploads(Key: string, before: Date): Promise<void> {
    let page: { KeyMarker?: string; UploadIdMarker?: string } = {};
    for (;;) {
      const res = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: Key, ...page }));
      for (const u of res.Uploads ?? []) {
        if (u.Key !== Key || !u.UploadId || (u.Initiated && u.Initiated >= before)) continue;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId: u.UploadId })).catch(ignoreMissing);
      }
      if (!res.IsTruncated) return;
      page = { KeyMarker: res.NextKeyMarker, UploadIdMarker: res.NextUploadIdMarker };
    }
  }

  async get(key: string): Promise<Readable> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
      return res.Body as Readable;
    } catch (err) {
      if (isMissing(err)) throw new ArchiveObjectMissing(this.locate(key));
      throw err;
    }
  }

  async head(key: string): Promise<{ bytes: number } | null> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
      return { bytes: Number(res.ContentLength ?? 0) };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(key) })).catch(ignoreMissing);
  }
}

function isMissing(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.name === 'NoSuchUpload' || err.$metadata?.httpStatusCode === 404);
}

function ignoreMissing(err: unknown): void {
  if (!isMissing(err)) throw err;
}
