# syntax=docker/dockerfile:1
# Tollgate image: API, worker or both (TOLLGATE_ROLE), plus the provider emulator for development.
# Node 24 is the current LTS line (the version npm run dev and npm test bring, scripts/node-runtime.json);
# the code also runs on 22, the oldest supported major (package.json engines).

ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: every dependency, TypeScript build and the prebuilt workflow bundle ------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY scripts ./scripts
COPY dashboard ./dashboard
# dist/src/main.js, dist/src/emulator/main.js, dist/src/cli/index.js, dist/workflow-bundle.js and
# the operator dashboard in dashboard/dist; tsc does not copy the SQL the migrator reads beside migrate.js
RUN npm run build \
 && cp -r src/db/migrations dist/src/db/migrations \
 && cp -r src/db/functions dist/src/db/functions

# --- production dependencies only -----------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- runtime --------------------------------------------------------------------------------------
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
