# syntax=docker/dockerfile:1
# Tollgate image: API, worker or both (TOLLGATE_ROLE). The provider emulator, a development tool, is
# not in it: `--target emulator` builds an image of its own (docker-compose.yml's emulator service).
# Node 24 is the current LTS line (the version npm run dev and npm test bring, scripts/node-runtime.json);
# the code also runs on 22, the oldest supported major (package.json engines).

ARG NODE_IMAGE=node:24-bookworm-slim

# --- every dependency, the build tools included ---------------------------------------------------
FROM ${NODE_IMAGE} AS dev-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# --- build: TypeScript build and the prebuilt workflow bundle -------------------------------------
FROM dev-deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY scripts ./scripts
COPY dashboard ./dashboard
# dist/src/main.js, dist/src/cli/index.js, dist/workflow-bundle.js and the operator dashboard in
# dashboard/dist; tsc does not copy the SQL the migrator reads beside migrate.js
RUN npm run build \
 && cp -r src/db/migrations dist/src/db/migrations \
 && cp -r src/db/functions dist/src/db/functions

# --- production dependencies only -----------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- the provider emulator (development only): emulator/ and the src/ modules it imports ----------
FROM dev-deps AS emulator-build
COPY tsconfig.json tsconfig.emulator.json ./
COPY src ./src
COPY emulator ./emulator
RUN npx tsc -p tsconfig.emulator.json

FROM ${NODE_IMAGE} AS emulator
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8090
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=emulator-build --chown=root:root /app/dist-emulator ./dist
COPY package.json ./
USER node
EXPOSE 8090
ENTRYPOINT ["node"]
CMD ["dist/emulator/main.js"]

# --- runtime (the default target: the last stage) -----------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=1 \
    HOST=0.0.0.0 \
    PORT=8080 \
    TEMPORAL_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/dashboard/dist ./dashboard/dist
COPY package.json ./
# The image's files stay root-owned and read-only to the process, which runs as `node` (uid 1000).
USER node
EXPOSE 8080
# No curl in the slim image: Node's fetch against the readiness route. The worker role has no HTTP
# listener; compose disables the check for it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=5 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/v1/public/status/summary').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node"]
CMD ["dist/src/main.js"]
