# One image for both roles: `nxs relay serve ...` and `nxs node run`.
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build && npm prune --omit=dev
ENV PATH=/app/bin:$PATH NEXUS_HOME=/data
VOLUME ["/data"]
ENTRYPOINT ["nxs"]
CMD ["--help"]
