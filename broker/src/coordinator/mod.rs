//! What every coordinator shares: the runtime it runs on ([`runtime`]),
//! its clock ([`clock`]) and the error codes it answers ([`errors`]). The
//! group coordinator (`group::manager`, classic and consumer groups alike)
//! and the transaction coordinator (`txn::manager`) are shells on the
//! runtime around their pure cores (`group::core`, `txn::core`).

pub mod clock;
pub mod errors;
pub mod runtime;
