//! tesserad: wiring only; the daemon lives in `bgp-speaker`.

fn main() {
    eprintln!("tesserad: not built yet");
    std::process::exit(2);
}
