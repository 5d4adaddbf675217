//! The `fairflow` binary: parses the command line and prints what the engines
//! answer. The only place that uses `anyhow` and prints to stdout.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    Ok(())
}
