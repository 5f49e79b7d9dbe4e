"""The only code that talks to the API server.

`client.KubeClient` is the door: async calls that give and take plain dicts, raise typed errors
(`errors`) and wait on client-side QPS limits (`ratelimit`); it never retries. Below it, `transport`
sends every request and stream through one aiohttp session (`session`, with TLS that follows its files:
`tlsreload`), and `watch` with `framing` cuts streamed bodies into events and lines. Where a client's
access comes from (in-cluster, kubeconfig, exec and auth-provider plugins, the environment's proxy) is
`access`, `config`, `kubeconfig`, `plugins` and `proxyenv`. Protobuf answers are read by upb
(`protoschema`, `protoupb`, `protoapi`), with a fall-back to JSON per resource (`negotiation`).
"""
