#include "web/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace profwatch::web {
namespace {

int NoVerify(int, X509_STORE_CTX*) { return 1; }

// The verification a policy asks for; `verify` null: OpenSSL's chain check.
int VerifyMode(ClientAuth auth, SSL_verify_cb* verify) {
  *verify = nullptr;
  switch (auth) {
    case ClientAuth::kNoClientCert:
      return SSL_VERIFY_NONE;
    case ClientAuth::kRequestClientCert:
      *verify = &NoVerify;
      return SSL_VERIFY_PEER;
    case ClientAuth::kRequireAnyClientCert:
      *verify = &NoVerify;
      return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    case ClientAuth::kVerifyClientCertIfGiven:
      return SSL_VERIFY_PEER;
    case ClientAuth::kRequireAndVerifyClientCert:
      return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  }
  return SSL_VERIFY_NONE;
}

}  // namespace

std::string OpenSslError(std::string_view if_none) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return std::string(if_none);
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

void SslCtxDeleter::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

Result<SslCtxPtr> BuildServerContext(const TlsServerConfig& tls, const std::string& path) {
  auto fail = [&](const std::string& what) {
    return tl::unexpected(WebConfigError(path, "tls_server_config: " + what));
  };
  std::string why;
  if (!Readable(tls.cert_file, why)) return fail("cert_file " + tls.cert_file + ": " + why);
  if (!Readable(tls.key_file, why)) return fail("key_file " + tls.key_file + ": " + why);
  if (!tls.client_ca_file.empty() && !Readable(tls.client_ca_file, why)) {
    return fail("client_ca_file " + tls.client_ca_file + ": " + why);
  }
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return fail("cannot create a TLS context: " + OpenSslError());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert_file.c_str()) != 1) {
    return fail("cert_file " + tls.cert_file + ": " + OpenSslError());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return fail("key_file " + tls.key_file + ": " + OpenSslError());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    return fail("key_file " + tls.key_file + " does not match cert_file " + tls.cert_file);
  }
  SSL_CTX_set_min_proto_version(ctx.get(), tls.min_version == 0 ? TLS1_2_VERSION : tls.min_version);
  SSL_CTX_set_max_proto_version(ctx.get(), tls.max_version);
  if (!tls.cipher_list.empty() &&
      SSL_CTX_set_cipher_list(ctx.get(), tls.cipher_list.c_str()) != 1) {
    return fail("cipher_suites: " + OpenSslError());
  }
  if (!tls.groups.empty() && SSL_CTX_set1_groups_list(ctx.get(), tls.groups.c_str()) != 1) {
    return fail("curve_preferences: " + OpenSslError());
  }
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (tls.prefer_server_cipher_suites) {
    SSL_CTX_set_options(ctx.get(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  // Sessions are not resumed: each connection is checked against the
  // policy of the file as it is then.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  static const unsigned char kSessionContext[] = "profwatch";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), tls.client_ca_file.c_str(), nullptr) != 1) {
      return fail("client_ca_file " + tls.client_ca_file + ": " + OpenSslError());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (names == nullptr) {
      return fail("client_ca_file " + tls.client_ca_file + ": no certificate in it");
    }
    SSL_CTX_set_client_CA_list(ctx.get(), names);
  }
  SSL_verify_cb verify = nullptr;
  const int mode = VerifyMode(tls.client_auth, &verify);  // sets `verify`
  SSL_CTX_set_verify(ctx.get(), mode, verify);
  return ctx;
}

bool ApplyTls(SSL* ssl, SSL_CTX* ctx, const TlsServerConfig& tls) {
  // The context carries the certificate, key and client CA store; the rest
  // was copied into the connection when it was created, so set it again.
  if (SSL_set_SSL_CTX(ssl, ctx) == nullptr) return false;
  SSL_verify_cb verify = nullptr;
  const int mode = VerifyMode(tls.client_auth, &verify);  // sets `verify`
  SSL_set_verify(ssl, mode, verify);
  SSL_set_min_proto_version(ssl, tls.min_version == 0 ? TLS1_2_VERSION : tls.min_version);
  SSL_set_max_proto_version(ssl, tls.max_version);
  if (!tls.cipher_list.empty()) SSL_set_cipher_list(ssl, tls.cipher_list.c_str());
  if (!tls.groups.empty()) SSL_set1_groups_list(ssl, tls.groups.c_str());
  SSL_set_options(ssl, SSL_CTX_get_options(ctx));
  if (!tls.prefer_server_cipher_suites) SSL_clear_options(ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_set_num_tickets(ssl, 0);
  return true;
}

}  // namespace profwatch::web
