//! A model of the partition takeover (docs/design/volume.md), explored
//! exhaustively: every interleaving of a leader, two brokers taking over
//! and the volume, with the leader paused or crashed anywhere, writes that
//! land late and in any order (what a stalled or lost mount does), and
//! crashed processes' writes lost or landing after their death.
//!
//! Invariants, at every reachable state:
//! - every acknowledged record is on the volume at its offset, below the
//!   start of the next generation (so every reader reads it);
//! - what a reader reads of a sealed generation (its file below the next
//!   generation's start) is exactly what was there when the next one
//!   began: no write that landed later is ever read;
//! - it has no hole.
//!
//! Each protocol step the argument relies on is also removed in turn, and
//! the search must then find a violation: the checks are not vacuous.

use std::collections::{BTreeMap, BTreeSet};

use crate::storage::model_check;

/// Appends each process tries when it leads (the third fewer: it only
/// has to show that a chain of takeovers keeps the first one's records).
const APPENDS: [u8; PROCESSES] = [2, 2, 1];
/// Process 0 leads generation 0; 1 and 2 take over (2 may be 0 restarted:
/// another incarnation of the same broker is another process).
const PROCESSES: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    /// Leading generation `gen`; the next append goes to `next`. Appends
    /// are pipelined: one may be issued before the earlier are durable.
    Lead {
        gen: u8,
        next: u8,
    },
    TakeBegin,
    /// `end`: read already (only when a mutation reads it first).
    TakeFence {
        latest: u8,
        end: Option<u8>,
    },
    TakeReadEnd {
        latest: u8,
    },
    TakeCreate {
        latest: u8,
        end: u8,
    },
    Stopped,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    pc: [Pc; PROCESSES],
    crashed: [bool; PROCESSES],
    fenced: [bool; PROCESSES],
    appends_made: [u8; PROCESSES],
    /// A leader's appends under way: (offset, id, durable).
    inflight: [BTreeSet<(u8, u8, bool)>; PROCESSES],
    /// (holder, start offset) per generation, in order.
    gens: Vec<(u8, u8)>,
    released: Vec<bool>,
    /// Writes issued and not landed: (process, generation, offset, id).
    pending: BTreeSet<(u8, u8, u8, u8)>,
    /// What the volume holds: (generation, offset) -> record id.
    landed: BTreeMap<(u8, u8), u8>,
    acked: BTreeSet<(u8, u8, u8)>,
    /// What each sealed generation held below the next one's start when
    /// that began.
    sealed: BTreeMap<u8, Vec<(u8, u8)>>,
}

/// Protocol steps a mutation removes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mutation {
    /// The taker does not fence the holder.
    no_fence: bool,
    /// The taker reads the end before it fences.
    end_before_fence: bool,
    /// The leader acknowledges without reading its fence.
    ack_unchecked: bool,
    /// The leader reads its fence before its write is durable.
    check_before_sync: bool,
    /// The end is taken after the last landed record, holes and all.
    end_past_holes: bool,
    /// A leader records that it let go while an append may still be
    /// acknowledged.
    release_in_flight: bool,
}

fn initial() -> State {
    let mut pc = [Pc::TakeBegin; PROCESSES];
    pc[0] = Pc::Lead { gen: 0, next: 0 };
    State {
        pc,
        crashed: [false; PROCESSES],
        fenced: [false; PROCESSES],
        appends_made: [0; PROCESSES],
        inflight: Default::default(),
        gens: vec![(0, 0)],
        released: vec![false],
        pending: BTreeSet::new(),
        landed: BTreeMap::new(),
        acked: BTreeSet::new(),
        sealed: BTreeMap::new(),
    }
}

fn record_id(process: usize, n: u8) -> u8 {
    (process as u8) * 16 + n
}

/// Every state one step from `s`.
#[allow(clippy::needless_range_loop)] // `p` names a process in every field
fn successors(s: &State, m: Mutation) -> Vec<State> {
    let mut out = Vec::new();
    for p in 0..PROCESSES {
        if s.pc[p] != Pc::Stopped {
            // Crash (or a pause that never ends) anywhere.
            let mut c = s.clone();
            c.pc[p] = Pc::Stopped;
            c.crashed[p] = true;
            c.inflight[p].clear();
            out.push(c);
        }
        match s.pc[p] {
            Pc::Lead { gen, next } => {
                if s.appends_made[p] < APPENDS[p] {
                    let mut c = s.clone();
                    let id = record_id(p, c.appends_made[p]);
                    c.appends_made[p] += 1;
                    c.pending.insert((p as u8, gen, next, id));
                    c.inflight[p].insert((next, id, false));
                    c.pc[p] = Pc::Lead {
                        gen,
                        next: next + 1,
                    };
                    out.push(c);
                }
                for &(offset, id, durable) in &s.inflight[p] {
                    if !durable {
                        // An fsync returns once every write issued before
                        // it landed.
                        let landed = !s
                            .pending
                            .iter()
                            .any(|w| w.0 == p as u8 && w.1 == gen && w.2 <= offset);
                        if landed || m.check_before_sync {
                            let mut c = s.clone();
                            c.inflight[p].remove(&(offset, id, false));
                            c.inflight[p].insert((offset, id, true));
                            out.push(c);
                        }
                        continue;
                    }
                    // Durable: read the fence, then acknowledge.
                    let mut c = s.clone();
                    c.inflight[p].remove(&(offset, id, true));
                    if s.fenced[p] && !m.ack_unchecked {
                        c.pc[p] = Pc::Stopped;
                        c.inflight[p].clear();
                    } else {
                        c.acked.insert((gen, offset, id));
                    }
                    out.push(c);
                }
                // Let go once no append can be acknowledged any more.
                if s.inflight[p].is_empty() || m.release_in_flight {
                    let mut c = s.clone();
                    c.released[gen as usize] = true;
                    if !m.release_in_flight {
                        c.pc[p] = Pc::Stopped;
                    }
                    out.push(c);
                }
            }
            Pc::TakeBegin => {
                let mut c = s.clone();
                let latest = (s.gens.len() - 1) as u8;
                c.pc[p] = match m.end_before_fence {
                    true => Pc::TakeReadEnd { latest },
                    false => Pc::TakeFence { latest, end: None },
                };
                out.push(c);
            }
            Pc::TakeFence { latest, end } => {
                let mut c = s.clone();
                let holder = s.gens[latest as usize].0 as usize;
                if !s.released[latest as usize] && !m.no_fence && holder != p {
                    c.fenced[holder] = true;
                }
                c.pc[p] = match end {
                    Some(end) => Pc::TakeCreate { latest, end },
                    None => Pc::TakeReadEnd { latest },
                };
                out.push(c);
            }
            Pc::TakeReadEnd { latest } => {
                let mut c = s.clone();
                let end = read_end(s, latest, m);
                c.pc[p] = match m.end_before_fence {
                    true => Pc::TakeFence {
                        latest,
                        end: Some(end),
                    },
                    false => Pc::TakeCreate { latest, end },
                };
                out.push(c);
            }
            Pc::TakeCreate { latest, end } => {
                let mut c = s.clone();
                if s.gens.len() - 1 == latest as usize {
                    // Created only if absent: the next generation is ours.
                    let start = s.gens[latest as usize].1;
                    let snapshot: Vec<(u8, u8)> = (start..end)
                        .filter_map(|o| s.landed.get(&(latest, o)).map(|id| (o, *id)))
                        .collect();
                    c.sealed.insert(latest, snapshot);
                    c.gens.push((p as u8, end));
                    c.released.push(false);
                    c.pc[p] = Pc::Lead {
                        gen: latest + 1,
                        next: end,
                    };
                } else {
                    c.pc[p] = Pc::TakeBegin;
                }
                out.push(c);
            }
            Pc::Stopped => {}
        }
    }
    // The volume: any issued write lands, in any order; a crashed
    // process's write may also never land.
    for w in &s.pending {
        let mut c = s.clone();
        c.pending.remove(w);
        let previous = c.landed.insert((w.1, w.2), w.3);
        assert!(previous.is_none(), "two writes at one place: {w:?}");
        out.push(c);
        if s.crashed[w.0 as usize] {
            let mut c = s.clone();
            c.pending.remove(w);
            out.push(c);
        }
    }
    out
}

/// Where the latest generation's records end, as a taker reads them.
fn read_end(s: &State, latest: u8, m: Mutation) -> u8 {
    let start = s.gens[latest as usize].1;
    if m.end_past_holes {
        return s
            .landed
            .keys()
            .filter(|(g, _)| *g == latest)
            .map(|(_, o)| o + 1)
            .max()
            .unwrap_or(start)
            .max(start);
    }
    let mut end = start;
    while s.landed.contains_key(&(latest, end)) {
        end += 1;
    }
    end
}

fn violation(s: &State) -> Option<String> {
    let last = (s.gens.len() - 1) as u8;
    for &(gen, offset, id) in &s.acked {
        if s.landed.get(&(gen, offset)) != Some(&id) {
            return Some(format!(
                "acknowledged {id} at {gen}/{offset} is not on the volume"
            ));
        }
        if gen < last && offset >= s.gens[gen as usize + 1].1 {
            return Some(format!(
                "acknowledged {id} at {gen}/{offset} lies past the next generation's start"
            ));
        }
    }
    for (&gen, snapshot) in &s.sealed {
        let (start, end) = (s.gens[gen as usize].1, s.gens[gen as usize + 1].1);
        let read: Vec<(u8, u8)> = (start..end)
            .filter_map(|o| s.landed.get(&(gen, o)).map(|id| (o, *id)))
            .collect();
        if &read != snapshot {
            return Some(format!(
                "generation {gen} reads {read:?} where it held {snapshot:?} when sealed"
            ));
        }
        if read.len() != usize::from(end - start) {
            return Some(format!("generation {gen} has a hole below {end}"));
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
fn the_takeover_protocol_holds_in_every_interleaving() {
    let (violation, states) = explore(Mutation::default());
    assert_eq!(violation, None);
    eprintln!("explored {states} states");
    assert!(states > 10_000, "explored {states} states");
}

#[test]
fn without_each_step_of_the_protocol_the_search_finds_a_violation() {
    let all = [
        Mutation {
            no_fence: true,
            ..Default::default()
        },
        Mutation {
            end_before_fence: true,
            ..Default::default()
        },
        Mutation {
            ack_unchecked: true,
            ..Default::default()
        },
        Mutation {
            check_before_sync: true,
            ..Default::default()
        },
        Mutation {
            end_past_holes: true,
            ..Default::default()
        },
        Mutation {
            release_in_flight: true,
            ..Default::default()
        },
    ];
    for m in all {
        let (violation, _) = explore(m);
        assert!(violation.is_some(), "{m:?} went unnoticed");
    }
}
