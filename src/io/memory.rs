//! How the process takes memory from the system and gives it back.

/// Blocks of a megabyte or more come from the system and go back to it when freed.
///
/// glibc raises its threshold for that each time such a block is freed (up to 32 MiB):
/// after a few long lines, a freed buffer of a line stays in the heap, touched, and each
/// thread keeps its own. The 1 GiB Codex pack then peaked anywhere from 82 to 89 MB run
/// to run; with this, 75 to 76 MB, DeepSeek Harness's 48 MB instead of 63 to 65. The
/// price is page faults wherever a large buffer is not kept and filled again: for `pack`,
/// whose buffers go round, 0.1 s on that Codex log; `unpack` of a DSH log was a fifth
/// slower (its read-ahead blocks come and go), so only `pack` asks for it. Call before
/// the command's threads start, for their first blocks to follow it.
pub fn return_large_frees() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets a parameter of glibc's allocator, under its own lock (the
    // signal thread may be running).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// The error for a copy of a line that memory had no room for (`len` bytes). The copies
/// of a line that may be huge (an interned line can stand for gigabytes) reserve with
/// `try_reserve` and fail with this, where an allocation that fails would abort.
pub fn no_room(len: usize) -> std::io::Error {
    let why = format!("not enough memory for its {len} bytes");
    std::io::Error::new(std::io::ErrorKind::OutOfMemory, why)
}

/// Appends `bytes` to `buf`, or fails with [`no_room`] (naming the bytes `buf` would then
/// hold) when memory cannot be had for them: for a copy of a line that may be huge, where
/// an allocation that fails would abort.
pub fn extend(buf: &mut Vec<u8>, bytes: &[u8]) -> std::io::Result<()> {
    if buf.try_reserve(bytes.len()).is_err() {
        return Err(no_room(buf.len() + bytes.len()));
    }
    buf.extend_from_slice(bytes);
    Ok(())
}
