//! Compact JWS with ES256 (ECDSA P-256, SHA-256), on `ring` — the crypto
//! provider the workspace's TLS already uses — for what an OAuth client signs
//! itself: DPoP proofs (RFC 9449) and `private_key_jwt` client assertions
//! (RFC 7523). The JWT crates with ES256 bring another provider (aws-lc), and
//! a client signs two kinds of token with claims it chooses, so the few lines
//! of encoding are kept here (see ARCHITECTURE.md).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// What went wrong with a signing key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The system's random source gave no key.
    #[error("no P-256 key could be generated")]
    Generate,
    /// The document is no PKCS#8 P-256 private key (with its public key).
    #[error("not a PKCS#8 P-256 private key ({0})")]
    NotPkcs8(String),
    /// A SEC1 key, which needs converting first.
    #[error("a SEC1 `EC PRIVATE KEY`: convert it to PKCS#8 (`openssl pkcs8 -topk8 -nocrypt`)")]
    Sec1,
    /// The text is no PEM block (the decoder's detail, which quotes the
    /// key's text, is left out).
    #[error("not a PEM block of base64")]
    NotPem,
    /// Signing failed.
    #[error("signing failed")]
    Sign,
    /// The key file could not be read or written.
    #[error("the key file: {0}")]
    File(#[from] std::io::Error),
}

/// An ES256 private key.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
    rng: SystemRandom,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey { .. }")
    }
}

impl SigningKey {
    /// A new random key.
    pub fn generate() -> Result<Self, KeyError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| KeyError::Generate)?;
        Self::from_pkcs8(doc.as_ref())
    }

    /// The key in a PKCS#8 DER document (P-256 with its public key).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, KeyError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| KeyError::NotPkcs8(e.to_string()))?;
        Ok(Self {
            pair,
            pkcs8: der.to_vec(),
            rng,
        })
    }

    /// The key in a PEM `PRIVATE KEY` (PKCS#8) block.
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        if pem.contains("BEGIN EC PRIVATE KEY") {
            return Err(KeyError::Sec1);
        }
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("-----"))
            .collect();
        let der = STANDARD.decode(body).map_err(|_| KeyError::NotPem)?;
        Self::from_pkcs8(&der)
    }

    /// The PKCS#8 document (what is kept on disk, mode 0600).
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`; never `d`).
    pub fn public_jwk(&self) -> Value {
        // An uncompressed SEC1 point: 0x04, then x and y of 32 bytes each.
        let point = self.pair.public_key().as_ref();
        let coordinate = |at| URL_SAFE_NO_PAD.encode(point.get(at).unwrap_or_default());
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": coordinate(1..33),
            "y": coordinate(33..65),
        })
    }

    /// `header` (with `alg` set to ES256) and `claims`, signed: a compact JWS.
    pub fn sign(&self, mut header: Value, claims: &Value) -> Result<String, KeyError> {
        if let Some(fields) = header.as_object_mut() {
            fields.insert("alg".into(), json!("ES256"));
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&self.rng, input.as_bytes())
            .map_err(|_| KeyError::Sign)?;
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh unguessable token identifier (`jti`).
pub fn jti() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}

/// The base64url SHA-256 of `text` (a DPoP proof's `ath`).
pub fn sha256_b64(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    #[test]
    fn a_signed_token_verifies_with_the_published_key_and_reloads() {
        let key = SigningKey::generate().unwrap();
        let token = key
            .sign(
                json!({"typ": "dpop+jwt"}),
                &json!({"jti": jti(), "iat": now()}),
            )
            .unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        let jwk = key.public_jwk();
        assert!(jwk.get("d").is_none());
        let mut point = vec![4u8];
        for c in ["x", "y"] {
            point.extend(URL_SAFE_NO_PAD.decode(jwk[c].as_str().unwrap()).unwrap());
        }
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let signed = format!("{}.{}", parts[0], parts[1]);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(signed.as_bytes(), &signature)
            .unwrap();
        // Through PEM and back: the same public key.
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(key.pkcs8())
        );
        assert_eq!(SigningKey::from_pem(&pem).unwrap().public_jwk(), jwk);
        let sec1 = SigningKey::from_pem("-----BEGIN EC PRIVATE KEY-----\nAA==\n").unwrap_err();
        assert!(sec1.to_string().contains("PKCS#8"), "{sec1}");
        assert!(SigningKey::from_pem("junk").is_err());
    }
}
