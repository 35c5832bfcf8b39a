# A static gitsync binary in a minimal non-root image.
# Build: docker build -t gitsync:dev .   (needs a Docker engine)
FROM golang:1.26 AS build
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY config/ config/
COPY internal/ internal/
RUN go build -trimpath -ldflags="-s -w" -o /out/gitsync ./cmd/gitsync

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gitsync /gitsync
USER 65532:65532
ENTRYPOINT ["/gitsync"]
CMD ["run"]
