//! Topology file formats.
//!
//! | format | read | write | relationships | latency | positions |
//! |---|---|---|---|---|---|
//! | CAIDA AS-relationship (`a\|b\|rel[\|source]`) | yes | yes | yes | no (0 on import) | no |
//! | BRITE `.brite` | yes | yes | no | yes (ms) | yes |
//! | TopologyZoo GML | yes | no | no | from latitude/longitude | no |
//! | GraphViz dot | no | yes | as edge styles | as labels | no |
//!
//! Parsers take the text and the file name (for errors, `FILE:LINE:
//! message`), never panic, and accept nothing that would make a graph
//! inconsistent (self-loops, links to unknown nodes, a pair listed twice
//! where the format forbids it).

pub mod brite;
pub mod caida;
pub mod dot;
pub mod gml;

use std::path::Path;

/// A file format.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// CAIDA AS-relationship.
    Caida,
    /// BRITE.
    Brite,
    /// TopologyZoo GML.
    Gml,
    /// GraphViz (write only).
    Dot,
}

impl Format {
    /// From a name (`caida`, `brite`, `gml`, `dot`).
    pub fn from_name(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "caida" | "as-rel" | "asrel" => Some(Format::Caida),
            "brite" => Some(Format::Brite),
            "gml" => Some(Format::Gml),
            "dot" | "gv" | "graphviz" => Some(Format::Dot),
            _ => None,
        }
    }

    /// From a file name: `.brite`, `.gml`, `.dot`/`.gv`, and `.txt` or
    /// anything containing `as-rel` for CAIDA.
    pub fn from_path(p: &Path) -> Option<Format> {
        let name = p.file_name()?.to_str()?.to_ascii_lowercase();
        if name.contains("as-rel") {
            return Some(Format::Caida);
        }
        let ext = p.extension()?.to_str()?;
        match ext.to_ascii_lowercase().as_str() {
            "brite" => Some(Format::Brite),
            "gml" => Some(Format::Gml),
            "dot" | "gv" => Some(Format::Dot),
            "txt" | "caida" => Some(Format::Caida),
            _ => None,
        }
    }
}
