//! What happens on SIGINT, SIGTERM and SIGHUP: temporary output files are removed, then the
//! process exits with 128 + the signal number (130, 143, 129), as shells expect.
//!
//! A command that can end cleanly on a signal (a streaming `pack`, which writes its output in
//! place) registers an interrupt handler instead: the first signal calls it, and the command
//! finishes what it has and exits with the same status. A second signal exits at once.
//!
//! The work is done on a thread of its own (signal-hook's self-pipe), never inside a signal
//! handler, so removing files and taking locks is safe.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

type Handler = Box<dyn FnOnce(i32) + Send>;

static TEMPS: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
static HANDLER: Mutex<Option<Handler>> = Mutex::new(None);
static INSTALLED: OnceLock<()> = OnceLock::new();

/// A temporary file that a signal must not leave behind. Dropping the guard forgets it (the
/// file has been renamed into place or removed).
#[derive(Debug)]
pub struct TempGuard(u64);

impl Drop for TempGuard {
    fn drop(&mut self) {
        lock(&TEMPS).retain(|(id, _)| *id != self.0);
    }
}

/// Remembers `path` for removal on a signal.
pub fn guard_temp(path: PathBuf) -> TempGuard {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock(&TEMPS).push((id, path));
    TempGuard(id)
}

/// Calls `f` with the signal number on the first SIGINT, SIGTERM or SIGHUP instead of
/// exiting. The handler is used once.
pub fn on_interrupt(f: impl FnOnce(i32) + Send + 'static) {
    *lock(&HANDLER) = Some(Box::new(f));
}

/// Forgets the interrupt handler: signals exit at once again.
pub fn clear_interrupt() {
    lock(&HANDLER).take();
}

/// The exit status for a signal, as shells report it.
pub fn exit_status(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(1)
}

/// Installs the handling described above. Call once, early in `main`; later calls do
/// nothing.
pub fn install() -> std::io::Result<()> {
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let _ = INSTALLED.set(());
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let handler = lock(&HANDLER).take();
                match handler {
                    Some(h) => h(sig),
                    None => {
                        remove_temps();
                        std::process::exit(i32::from(exit_status(sig)));
                    }
                }
            }
        })?;
    Ok(())
}

fn remove_temps() {
    for (_, path) in lock(&TEMPS).drain(..) {
        let _ = std::fs::remove_file(path);
    }
}

/// A poisoned lock only means another thread panicked while holding it; the list is still
/// usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a command returns when it stopped cleanly on a signal; `main` exits with
/// [`exit_status`] of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted(pub i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by signal {}", self.0)
    }
}

impl std::error::Error for Interrupted {}
