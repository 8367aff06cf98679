#pragma once
// libcrypto (OpenSSL 3) for the shared tier's request signing: the EVP one-shot digests
// (SHA-256, and MD5 for Content-MD5) and the one-shot HMAC, none of them deprecated in 3.0.
#include <openssl/evp.h>
#include <openssl/hmac.h>
