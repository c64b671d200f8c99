use std::process::ExitCode;

fn main() -> ExitCode {
    webtune::cli::main()
}
