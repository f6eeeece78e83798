// The server's TLS context for a web config file's tls_server_config, and
// the OpenSSL error text both sides of the door (server, probe) report.
//
// Thread-safety: BuildServerContext and OpenSslError are reentrant (the
// error queue is per thread); ApplyTls changes only the connection given.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "web/web_config.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace profwatch::web {

// The oldest error on this thread's OpenSSL queue as text (the queue is
// cleared); `if_none` when the queue is empty.
std::string OpenSslError(std::string_view if_none = "unknown TLS error");

struct SslCtxDeleter {
  void operator()(SSL_CTX* ctx) const;
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxDeleter>;

// The TLS context for `tls` (certificate, key, client CA, verification,
// versions, ciphers, groups), reading the files it names. kConfig errors
// start "web config file PATH: tls_server_config: " and name the file.
Result<SslCtxPtr> BuildServerContext(const TlsServerConfig& tls, const std::string& path);

// Gives connection `ssl` the context `ctx` (built from `tls`) and the
// policy `tls` sets: verification, versions, ciphers, groups. False when
// OpenSSL refuses the context.
bool ApplyTls(SSL* ssl, SSL_CTX* ctx, const TlsServerConfig& tls);

}  // namespace profwatch::web
