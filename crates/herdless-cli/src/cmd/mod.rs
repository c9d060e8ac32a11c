//! One folder per subcommand; only [`crate::cli`] imports them, and none
//! imports another (what two of them share is in [`crate::shared`]).

#[allow(unreachable_pub, dead_code)] // its items become pub(crate) in a commit of their own
pub(crate) mod analyze;
#[allow(unreachable_pub)] // its items become pub(crate) in a commit of their own
pub(crate) mod check;
pub(crate) mod exec;
#[allow(unreachable_pub)] // its items become pub(crate) in a commit of their own
pub(crate) mod fleet;
pub(crate) mod get;
pub(crate) mod simulate;
pub(crate) mod stub;
#[allow(unreachable_pub)] // its items become pub(crate) in a commit of their own
pub(crate) mod tune;
pub(crate) mod worker;
