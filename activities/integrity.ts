import { projectsNeedingCheckpoint } from '../src/db/repositories/integrity-log';
import { complianceSigner } from '../src/integrity/keys';
import { issueCheckpoint, LogIntegrityError } from '../src/integrity/log';
import type { ActivityDeps } from './deps';

export function createIntegrityActivities({ db, config, logger }: Pick<ActivityDeps, 'db' | 'config' | 'logger'>) {
  return {
    /**
     * One checkpoint round: signs a checkpoint for every project whose event log grew since its
     * latest one. A project whose log fails its checks is reported (logged, counted) and skipped;
     * the others are still checkpointed. Returns how many checkpoints were issued.
     */
    async issueCheckpoints(): Promise<{ issued: number; failed: string[] }> {
      const signer = await complianceSigner(db, config);
      let issued = 0;
      const failed: string[] = [];
      for (const projectId of await projectsNeedingCheckpoint(db)) {
        try {
          const r = await issueCheckpoint(db, signer, projectId);
          if (r.issued) issued += 1;
        } catch (err) {
          if (!(err instanceof LogIntegrityError)) throw err;
          failed.push(projectId);
          logger.error({ project_id: projectId, position: err.position, reason: err.message }, 'event log failed its integrity check; no checkpoint issued');
        }
      }
      return { issued, failed };
    },
  };
}

export type IntegrityActivities = ReturnType<typeof createIntegrityActivities>;
