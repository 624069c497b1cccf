//! The process's memory allocator: mimalloc (the `mimalloc` crate, v3)
//! instead of glibc's malloc.
//!
//! Why (issue 17; docs/BENCHMARKS.md, "mimalloc as tesserad's
//! allocator"): tesserad allocates on one thread and frees on another all
//! the time. A received UPDATE is decoded on its session thread and freed
//! on a RIB thread, and an encoded UPDATE goes the other way round.
//! glibc's malloc hands each such free back to the arena the memory came
//! from, under that arena's lock, and profiles put the allocator at
//! 15-20 % of the daemon's CPU. In the same runs, mimalloc cut the
//! default pipeline's CPU-s by 23-30 % in scenarios (c10), (c30) and (f)
//! and by 10 % under steady churn (h); (a), (b) and (g) did not move.
//!
//! Two of mimalloc's defaults are changed so that the resident size
//! follows what is live (issue 17 compares peak RSS with BIRD's):
//! - arenas commit on demand (`MIMALLOC_ARENA_EAGER_COMMIT=0`);
//! - freed pages go back to the OS at once (`MIMALLOC_PURGE_DELAY=0`).
//!
//! With mimalloc's defaults, (g)'s peak RSS was 35-45 % above glibc's.
//! With the defaults minus transparent huge pages it was 15-20 % above
//! in (a), (c10) and (c30), which put (a) and (c10) over BIRD's.
//!
//! mimalloc reads its options from the environment when it initialises,
//! in a constructor of priority 101, before `main`, and reserves its
//! first arena before `main` too. So the options are set here as
//! environment defaults from a constructor that runs just before it
//! (priority 100). An operator's own `MIMALLOC_*` variables are kept
//! (`setenv` without overwrite).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's options that tesserad sets unless the environment names
/// them (module docs).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub const DEFAULTS: [(&std::ffi::CStr, &std::ffi::CStr); 2] = [
    (c"MIMALLOC_ARENA_EAGER_COMMIT", c"0"),
    (c"MIMALLOC_PURGE_DELAY", c"0"),
];

/// `.init_array` entries run in ascending priority: 100 comes before
/// mimalloc's own constructor (101). ELF only; tesserad is Linux-only.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array.00100"]
static SET_DEFAULTS: extern "C" fn() = set_defaults;

#[cfg(target_os = "linux")]
extern "C" fn set_defaults() {
    for (name, value) in DEFAULTS {
        // SAFETY: before `main`, with one thread; both strings are
        // NUL-terminated. Overwrite 0 keeps a value the environment has.
        // glibc's `setenv` allocates with glibc's malloc, not with the
        // global allocator, so mimalloc is not started by it.
        unsafe {
            libc::setenv(name.as_ptr(), value.as_ptr(), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constructor ran before the test harness's `main`: the variables
    /// are set in the test process (to the defaults unless the environment
    /// already had them), which is what mimalloc read when it initialised.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_constructor_sets_mimalloc_defaults_before_main() {
        for (name, _) in DEFAULTS {
            let name = name.to_str().expect("ASCII");
            assert!(
                std::env::var_os(name).is_some(),
                "{name} is not set: the .init_array constructor did not run"
            );
        }
    }
}
