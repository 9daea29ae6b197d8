//! The statecraft command.

fn main() {}
