# The API as a small, non-root image. Build: docker build -t shelf .
# Swagger UI (for /docs) comes from npm in its own stage, as make web-assets
# fetches it, and is embedded in the binary.
FROM node:20 AS web
WORKDIR /web
RUN npm install --no-audit --no-fund --loglevel=error swagger-ui-dist@5.35.0

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=web /web/node_modules/swagger-ui-dist/swagger-ui-bundle.js /web/node_modules/swagger-ui-dist/swagger-ui.css handlers/web/vendor/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/api /api
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/api"]
CMD ["serve"]
