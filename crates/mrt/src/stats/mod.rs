//! Summary statistics over MRT records, and the whole `tessera mrt stats`
//! report: [`Stats`] counts a stream of records; [`FileStats`] reads one
//! file, adds what needs the whole read and bgp-wire (prefixes inside
//! BGP4MP UPDATEs), and writes the text or JSON report.

mod counts;
mod file;
mod render;

pub use counts::Stats;
pub use file::FileStats;
pub use render::type_name;
