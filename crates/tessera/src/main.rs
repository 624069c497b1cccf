fn main() {
    eprintln!("tessera: no command yet");
    std::process::exit(2);
}
