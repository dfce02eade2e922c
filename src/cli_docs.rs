//! Shell completions and the man page, generated from the clap definition in `cli`, so they
//! never drift from the flags the program takes.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// Completions of every subcommand and flag for `shell`.
pub fn completions(shell: clap_complete::Shell, out: &mut impl Write) -> std::io::Result<()> {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "gpudeck", out);
    Ok(())
}

/// The man page of gpudeck (section 1, roff), with its subcommands.
pub fn man(out: &mut Vec<u8>) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}
