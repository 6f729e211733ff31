# The kroll binary, for `kroll controller-manager` in a cluster (deploy/).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /kroll ./cmd/kroll

FROM gcr.io/distroless/static:nonroot
COPY --from=build /kroll /kroll
USER 65532:65532
ENTRYPOINT ["/kroll"]
