//! Randomness from the operating system, the only source this crate uses:
//! keys, nonces, salts and ephemeral secrets all come from here.

use crate::error::{Error, Result};

/// `N` random bytes. A caller that keeps a secret in them zeroizes it.
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::Randomness(e.to_string()))?;
    Ok(bytes)
}
