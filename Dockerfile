# One image for both roles: `nxs relay serve ...` and `nxs node run`.
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build && npm prune --omit=dev
ENV PATH=/app/bin:$PATH NEXUS_HOME=/data
# The node runs as the image's `node` user (uid 1000), not root: a named volume mounted at /data starts
# with this folder's owner, and workspaces under a host folder are owned by the host's user, which
# git accepts only when the uid matches (docker-compose.yml sets it from NEXUS_UID).
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
VOLUME ["/data"]
ENTRYPOINT ["nxs"]
CMD ["--help"]
