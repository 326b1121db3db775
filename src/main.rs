//! The `piotwin` command line.

fn main() {
    todo!("piotwin CLI")
}
