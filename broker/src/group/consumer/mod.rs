//! The KIP-848 consumer group protocol (issue #16), sans-IO as the classic
//! coordinator's core. So far: a group's records and their replay
//! (`records`, `group`, `member`), the target assignment (`target`, Apache's
//! `TargetAssignmentBuilder`) and the reconciliation of one member towards
//! it (`reconcile`, Apache's `CurrentAssignmentBuilder`), the heartbeat
//! (`heartbeat`) with its regular-expression subscriptions
//! (`regex_subscription`), and the online migration from and to classic groups
//! (`classic`).

pub mod config;
pub mod group;
pub mod heartbeat;
pub mod member;
pub mod reconcile;
pub mod records;
pub mod regex_subscription;
pub mod target;
