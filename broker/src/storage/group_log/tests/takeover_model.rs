//! A model of the takeover of a group (or transactional id) log
//! (takeover.rs; docs/design/volume.md, "Group and transaction logs"),
//! explored exhaustively: a holder that appends and replaces its file by a
//! snapshot, two brokers taking the log over (the second under a newer
//! assignment, so it may fence the first), every process paused or crashed
//! anywhere, and every write (journal entries, records, renames) landing
//! late and in any order, or lost with a crashed process.
//!
//! Invariants, at every reachable state:
//! - every acknowledged record is read at its position by a load of the
//!   log (the file at the path, completed from its claimant's journal);
//! - the file at the path is never replaced by one of a process the last
//!   takeover superseded (a zombie's snapshot or takeover landing late);
//! - what a load reads is what the file's claimant restored when it took
//!   the log over, followed by the claimant's own records: no write of a
//!   fenced process that lands later is read.
//!
//! Each protocol step the argument relies on is also removed in turn, and
//! the search must then find a violation: the checks are not vacuous.

use std::collections::{BTreeMap, BTreeSet};

use crate::storage::model_check;

/// Process 0 holds the log first; 1 and 2 take it over, 2 under a newer
/// assignment than 1 (a process's index is its assignment's order).
const PROCESSES: usize = 3;
/// Appends each process makes when it leads.
const APPENDS: [u8; PROCESSES] = [2, 1, 1];
/// Markers a taker tries (takeover.rs tries 8; two takers use at most two).
const MARKERS: u8 = 3;

/// A record: (process, its n-th append).
type Rec = (u8, u8);
/// A log file (its log id: a new file has a new one).
type Inode = u8;
/// Landed journal entries of one process: (log, position) -> (the record
/// before, the record).
type Journal = BTreeMap<(Inode, u8), (Option<Rec>, Rec)>;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Op {
    Journal {
        log: Inode,
        pos: u8,
        prev: Option<Rec>,
        rec: Rec,
    },
    Write {
        log: Inode,
        pos: u8,
        rec: Rec,
    },
    /// The process's tmp file renamed over the log's path.
    Rename,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Leading {
    log: Inode,
    view: Vec<Rec>,
    made: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Taking {
    tries: u8,
    seen: Inode,
    claim: u8,
    won: u8,
    /// The claimant's journal as read before the fence (a mutation).
    early: Option<Journal>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Pc {
    Lead(Leading),
    /// Its journal entry made durable (fsync), then its fence read.
    Flush(Leading, u8, Rec),
    Check(Leading, u8, Rec),
    SnapCheck(Leading, Inode),
    SnapWait(Leading, Inode),
    TakeBegin {
        tries: u8,
    },
    TakeFence(Taking),
    TakeRemoveTmp(Taking),
    TakeMarker(Taking, u8),
    TakeOpen(Taking),
    TakeJournal(Taking, Vec<Rec>),
    TakeCheck(Taking, Vec<Rec>, Inode),
    TakeWait(Taking, Vec<Rec>),
    Stopped,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct LogFile {
    claim: u8,
    content: BTreeMap<u8, Rec>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    pc: [Pc; PROCESSES],
    crashed: [bool; PROCESSES],
    fenced: [bool; PROCESSES],
    path: Inode,
    files: Vec<LogFile>,
    tmp: [Option<Inode>; PROCESSES],
    markers: BTreeMap<(Inode, u8), u8>,
    journals: [Journal; PROCESSES],
    pending: BTreeSet<(u8, Op)>,
    acked: BTreeSet<(u8, Rec)>,
    /// How many records each taker restored into its new file.
    restored: [Option<u8>; PROCESSES],
    /// A rename replaced the file of a later takeover by an earlier one's.
    zombie_rename: bool,
}

/// Protocol steps a mutation removes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mutation {
    /// The taker does not fence the claimant.
    no_fence: bool,
    /// The taker reads the claimant's journal before fencing it.
    journal_before_fence: bool,
    /// The taker restores the file's records only, not the journal's.
    no_journal: bool,
    /// The taker leaves the claimant's tmp file (its snapshot) in place.
    keep_tmp: bool,
    /// Takers take no marker.
    no_marker: bool,
    /// The taker reads the file it opened even if the path changed.
    no_identity_check: bool,
    /// The taker renames its file in without reading its own fence.
    rename_unchecked: bool,
    /// A holder acknowledges without reading its fence.
    ack_unchecked: bool,
    /// The holder renames its snapshot in without reading its fence.
    snapshot_unchecked: bool,
}

fn initial() -> State {
    State {
        pc: [
            Pc::Lead(Leading {
                log: 0,
                view: Vec::new(),
                made: 0,
            }),
            Pc::TakeBegin { tries: 0 },
            Pc::TakeBegin { tries: 0 },
        ],
        crashed: [false; PROCESSES],
        fenced: [false; PROCESSES],
        path: 0,
        files: vec![LogFile {
            claim: 0,
            content: BTreeMap::new(),
        }],
        tmp: [None; PROCESSES],
        markers: BTreeMap::new(),
        journals: Default::default(),
        pending: BTreeSet::new(),
        acked: BTreeSet::new(),
        restored: [None; PROCESSES],
        zombie_rename: false,
    }
}

/// The records of `content` from position 0 up to its first hole.
fn prefix(content: &BTreeMap<u8, Rec>) -> Vec<Rec> {
    (0u8..)
        .map_while(|pos| content.get(&pos).copied())
        .collect()
}

/// `read` followed by the journal entries of `log` that continue it, each
/// at the end so far and naming the record before (complete_from_journal).
fn complete(mut read: Vec<Rec>, journal: &Journal, log: Inode) -> Vec<Rec> {
    while let Some((prev, rec)) = journal.get(&(log, read.len() as u8)) {
        if *prev != read.last().copied() {
            break;
        }
        read.push(*rec);
    }
    read
}

/// What a load of the log reads now.
fn load(s: &State) -> Vec<Rec> {
    let file = &s.files[s.path as usize];
    complete(
        prefix(&file.content),
        &s.journals[file.claim as usize],
        s.path,
    )
}

/// Every state one step from `s`.
fn successors(s: &State, m: Mutation) -> Vec<State> {
    let mut out = Vec::new();
    for (p, op) in &s.pending {
        out.push(land(s, *p, op));
        if s.crashed[*p as usize] {
            let mut c = s.clone();
            c.pending.remove(&(*p, op.clone()));
            out.push(c);
        }
    }
    for p in 0..PROCESSES {
        if s.pc[p] != Pc::Stopped {
            let mut c = s.clone();
            c.pc[p] = Pc::Stopped;
            c.crashed[p] = true;
            out.push(c);
        }
        out.extend(step(s, p as u8, m));
    }
    out
}

/// A write of process `p` lands on the volume.
fn land(s: &State, p: u8, op: &Op) -> State {
    let mut c = s.clone();
    c.pending.remove(&(p, op.clone()));
    let pi = p as usize;
    match *op {
        Op::Journal {
            log,
            pos,
            prev,
            rec,
        } => {
            c.journals[pi].insert((log, pos), (prev, rec));
        }
        Op::Write { log, pos, rec } => {
            c.files[log as usize].content.insert(pos, rec);
        }
        Op::Rename => {
            let renamed = c.tmp[pi].take();
            if let Some(file) = renamed {
                let replaced = c.files[c.path as usize].claim;
                if c.files[file as usize].claim < replaced {
                    c.zombie_rename = true;
                }
                c.path = file;
            }
            if c.crashed[pi] {
                return c;
            }
            c.pc[pi] = match (renamed, &s.pc[pi]) {
                (Some(file), Pc::SnapWait(l, _)) => Pc::Lead(Leading {
                    log: file,
                    ..l.clone()
                }),
                (Some(file), Pc::TakeWait(t, restored)) => {
                    for n in 0..=t.won {
                        c.markers.remove(&(t.seen, n));
                    }
                    c.restored[pi] = Some(restored.len() as u8);
                    Pc::Lead(Leading {
                        log: file,
                        view: restored.clone(),
                        made: 0,
                    })
                }
                // The tmp file was removed: the rename fails.
                _ => Pc::Stopped,
            };
        }
    }
    c
}

/// Process `p`'s next step, if it can make one.
fn step(s: &State, p: u8, m: Mutation) -> Vec<State> {
    let pi = p as usize;
    let mut c = s.clone();
    match s.pc[pi].clone() {
        Pc::Stopped | Pc::SnapWait(..) | Pc::TakeWait(..) => return vec![],
        Pc::Lead(mut l) => {
            if l.made == APPENDS[pi] {
                c.pc[pi] = Pc::Stopped;
                return vec![c];
            }
            let mut out = Vec::new();
            if p == 0 && l.made == 1 && l.log == 0 {
                // The holder may replace its file by a snapshot first.
                let mut snap = s.clone();
                let file = snap.files.len() as Inode;
                snap.files.push(LogFile {
                    claim: p,
                    content: l
                        .view
                        .iter()
                        .copied()
                        .enumerate()
                        .map(|(i, r)| (i as u8, r))
                        .collect(),
                });
                snap.tmp[pi] = Some(file);
                snap.pc[pi] = Pc::SnapCheck(l.clone(), file);
                out.push(snap);
            }
            let (pos, rec) = (l.view.len() as u8, (p, l.made));
            let prev = l.view.last().copied();
            c.pending.insert((
                p,
                Op::Journal {
                    log: l.log,
                    pos,
                    prev,
                    rec,
                },
            ));
            c.pending.insert((
                p,
                Op::Write {
                    log: l.log,
                    pos,
                    rec,
                },
            ));
            l.view.push(rec);
            c.pc[pi] = Pc::Flush(l, pos, rec);
            out.push(c);
            return out;
        }
        Pc::Flush(l, pos, rec) => {
            if s.pending
                .iter()
                .any(|(q, op)| *q == p && matches!(op, Op::Journal { .. }))
            {
                return vec![];
            }
            c.pc[pi] = Pc::Check(l, pos, rec);
        }
        Pc::Check(mut l, pos, rec) => {
            if s.fenced[pi] && !m.ack_unchecked {
                c.pc[pi] = Pc::Stopped;
            } else {
                c.acked.insert((pos, rec));
                l.made += 1;
                c.pc[pi] = Pc::Lead(l);
            }
        }
        Pc::SnapCheck(l, file) => {
            if s.fenced[pi] && !m.snapshot_unchecked {
                c.tmp[pi] = None;
                c.pc[pi] = Pc::Stopped;
            } else {
                c.pending.insert((p, Op::Rename));
                c.pc[pi] = Pc::SnapWait(l, file);
            }
        }
        Pc::TakeBegin { tries } => {
            let seen = s.path;
            let claim = s.files[seen as usize].claim;
            if claim >= p {
                // Ours already, or claimed under a newer assignment.
                c.pc[pi] = Pc::Stopped;
            } else {
                let early = m
                    .journal_before_fence
                    .then(|| s.journals[claim as usize].clone());
                c.pc[pi] = Pc::TakeFence(Taking {
                    tries,
                    seen,
                    claim,
                    won: 0,
                    early,
                });
            }
        }
        Pc::TakeFence(t) => {
            if !m.no_fence {
                c.fenced[t.claim as usize] = true;
            }
            c.pc[pi] = Pc::TakeRemoveTmp(t);
        }
        Pc::TakeRemoveTmp(t) => {
            if !m.keep_tmp {
                c.tmp[t.claim as usize] = None;
            }
            c.pc[pi] = if m.no_marker {
                Pc::TakeOpen(t)
            } else {
                Pc::TakeMarker(t, 0)
            };
        }
        Pc::TakeMarker(mut t, n) => {
            match s.markers.get(&(t.seen, n)) {
                None => {
                    c.markers.insert((t.seen, n), p);
                    t.won = n;
                    c.pc[pi] = Pc::TakeOpen(t);
                }
                Some(&q) if q == p => {
                    t.won = n;
                    c.pc[pi] = Pc::TakeOpen(t);
                }
                // Alive under our assignment: it is taking the log over.
                Some(&q) if q > p => c.pc[pi] = Pc::Stopped,
                Some(&q) => {
                    // Counted dead: fenced, its rename made impossible, and
                    // its marker superseded.
                    c.fenced[q as usize] = true;
                    c.tmp[q as usize] = None;
                    c.pc[pi] = if n + 1 < MARKERS {
                        Pc::TakeMarker(t, n + 1)
                    } else {
                        Pc::Stopped
                    };
                }
            }
        }
        Pc::TakeOpen(t) => {
            let changed = s.path != t.seen || s.files[t.seen as usize].claim != t.claim;
            if changed && !m.no_identity_check {
                c.markers.remove(&(t.seen, t.won));
                c.pc[pi] = if t.tries < 1 {
                    Pc::TakeBegin { tries: t.tries + 1 }
                } else {
                    Pc::Stopped
                };
            } else {
                let read = prefix(&s.files[t.seen as usize].content);
                c.pc[pi] = Pc::TakeJournal(t, read);
            }
        }
        Pc::TakeJournal(t, read) => {
            let restored = if m.no_journal {
                read
            } else {
                let journal = t.early.as_ref().unwrap_or(&s.journals[t.claim as usize]);
                complete(read, journal, t.seen)
            };
            let file = c.files.len() as Inode;
            c.files.push(LogFile {
                claim: p,
                content: restored
                    .iter()
                    .copied()
                    .enumerate()
                    .map(|(i, r)| (i as u8, r))
                    .collect(),
            });
            c.tmp[pi] = Some(file);
            c.pc[pi] = Pc::TakeCheck(t, restored, file);
        }
        Pc::TakeCheck(t, restored, _) => {
            if s.fenced[pi] && !m.rename_unchecked {
                c.tmp[pi] = None;
                c.pc[pi] = Pc::Stopped;
            } else {
                c.pending.insert((p, Op::Rename));
                c.pc[pi] = Pc::TakeWait(t, restored);
            }
        }
    }
    vec![c]
}

fn violation(s: &State) -> Option<String> {
    if s.zombie_rename {
        return Some("a superseded process's file replaced a later takeover's".into());
    }
    let read = load(s);
    for &(pos, rec) in &s.acked {
        if read.get(pos as usize) != Some(&rec) {
            return Some(format!("acknowledged {rec:?} at {pos} not read: {read:?}"));
        }
    }
    let claim = s.files[s.path as usize].claim;
    if let Some(restored) = s.restored[claim as usize] {
        if let Some(r) = read.iter().skip(restored as usize).find(|r| r.0 != claim) {
            return Some(format!(
                "{r:?} read after what process {claim} restored: {read:?}"
            ));
        }
    }
    None
}

/// Every reachable state explored: the first violation found, and how
/// many states were seen.
fn explore(m: Mutation) -> (Option<String>, usize) {
    model_check::explore(initial(), |s| successors(s, m), violation)
}

#[test]
fn the_group_log_takeover_holds_in_every_interleaving() {
    let (violation, states) = explore(Mutation::default());
    assert_eq!(violation, None);
    eprintln!("explored {states} states");
    assert!(states > 10_000, "explored {states} states");
}

#[test]
fn without_each_step_of_the_group_log_takeover_the_search_finds_a_violation() {
    let d = Mutation::default();
    let all = [
        Mutation {
            no_fence: true,
            ..d
        },
        Mutation {
            journal_before_fence: true,
            ..d
        },
        Mutation {
            no_journal: true,
            ..d
        },
        Mutation {
            keep_tmp: true,
            ..d
        },
        Mutation {
            no_marker: true,
            ..d
        },
        Mutation {
            no_identity_check: true,
            ..d
        },
        Mutation {
            rename_unchecked: true,
            ..d
        },
        Mutation {
            ack_unchecked: true,
            ..d
        },
        Mutation {
            snapshot_unchecked: true,
            ..d
        },
    ];
    for m in all {
        let (violation, states) = explore(m);
        assert!(
            violation.is_some(),
            "{m:?}: no violation in {states} states"
        );
        eprintln!("{m:?}: {}", violation.unwrap());
    }
}
