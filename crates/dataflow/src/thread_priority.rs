//! A thread's scheduling priority lowered (Linux's nice value, per thread):
//! the work the engine and the service hand to threads of their own
//! (freeing a replaced whole-queue read, a what-if evaluated on a copy)
//! yields the cores to the applier, the driver and the workers whenever
//! they want them.

/// The nice value of the thread that frees a replaced whole-queue read
/// (`Engine::discard`): the lowest priority, it runs on what the reads and
/// writes leave.
pub const FREE_THREAD_NICE: i32 = 19;

/// Set the calling thread's nice value to `nice` (Linux; elsewhere the
/// thread keeps the process's priority and this succeeds).
pub fn lower_this_thread(nice: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice)?;
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread lowered to nice 19 reads back 19 (Linux: `getpriority` of
    /// its own id); the thread that spawned it keeps its own value.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_lowered_thread_has_the_nice_value_and_its_parent_keeps_its_own() {
        let own = || rustix::process::getpriority_process(Some(rustix::thread::gettid()));
        let parent_before = own().expect("reads the priority");
        let lowered = std::thread::spawn(move || {
            lower_this_thread(FREE_THREAD_NICE).expect("lowering is allowed");
            own().expect("reads the priority")
        })
        .join()
        .expect("the thread ends");
        assert_eq!(lowered, FREE_THREAD_NICE);
        assert_eq!(own().expect("reads the priority"), parent_before);
    }
}
