//! Process measurements: CPU time (own and of a child), live heap bytes (a
//! counting allocator), and a small seeded RNG.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::Duration;

/// The global allocator of the bench binary: `System` (the brokers'
/// allocator), counting live bytes. The brokers the bench starts in-process
/// allocate through it too, which is how the memory figures are measured.
/// A broker serving in a child process stops counting (`stop_counting`),
/// so it runs as the `kaas-broker` binary does.
pub struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(true);
static INNER: System = System;

/// Stops counting for the rest of the process (the shared counter costs
/// every allocation a contended atomic).
pub fn stop_counting() {
    COUNTING.store(false, Ordering::Relaxed);
}

fn count(bytes: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_add(bytes, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = INNER.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = INNER.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        INNER.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = INNER.realloc(ptr, layout, new_size);
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Bytes currently allocated on the heap by this process (Rust allocations;
/// librdkafka's C allocations are not counted).
pub fn live_heap_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed) as i64
}

/// CPU time (user + system) this process has used so far.
pub fn own_cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we pass.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time (user + system, all threads, exited ones included) of process
/// `pid`, from `/proc/<pid>/stat` (clock-tick resolution).
pub fn process_cpu(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let ticks = parse_stat_cpu_ticks(&stat)
        .ok_or_else(|| anyhow::anyhow!("unparsable /proc/{pid}/stat"))?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_nanos(ticks * 1_000_000_000 / hz))
}

/// utime + stime (fields 14 and 15) of a `/proc/<pid>/stat` line. The
/// command name (field 2) is in parentheses and may hold spaces.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field N is at index N - 3.
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(utime + stime)
}

/// Flushes the file system holding `dir` (syncfs) and waits a moment, so a
/// measurement does not pay for the writeback of the one before it.
pub fn settle_disk(dir: &std::path::Path) {
    use std::os::fd::AsRawFd;
    if let Ok(f) = std::fs::File::open(dir) {
        // SAFETY: syncfs takes any open descriptor on the file system.
        unsafe { libc::syncfs(f.as_raw_fd()) };
    }
    std::thread::sleep(Duration::from_millis(200));
}

/// The 1-minute load average (how busy the shared machine was).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// xorshift64*: a seeded, allocation-free RNG for choosing groups.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

#[cfg(test)]
mod tests;
