/** The archive store the configuration names (S3 when ARCHIVE_S3_BUCKET is set, else ARCHIVE_DIR). */
import type { Config } from '../config';
import { DirectoryArchiveStore } from './directory';
import { S3ArchiveStore } from './s3';
import type { ArchiveStore } from './store';

const stores = new WeakMap<Config['archiveStore'], ArchiveStore>();

/** The store the configuration names; one per configuration (its S3 client keeps its connections). */
export function archiveStoreOf(config: Pick<Config, 'archiveStore'>): ArchiveStore {
  let store = stores.get(config.archiveStore);
  if (!store) {
    const c = config.archiveStore;
    store = c.kind === 's3' ? new S3ArchiveStore(c) : new DirectoryArchiveStore(c.dir);
    stores.set(c, store);
  }
  return store;
}
