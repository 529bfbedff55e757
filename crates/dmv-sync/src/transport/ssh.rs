//! The command that reaches an ssh remote: the system's `ssh` (or
//! `DMV_SSH`), running `dmv serve --stdio` on the far side, as Git does.

use std::process::{Command, Stdio};

use crate::transport::stdio::shell_quote;

/// OpenSSH's cipher order when no configuration names one (the same from
/// 6.9 to 9.x). ChaCha20 comes first because it is fast without hardware
/// help; with AES instructions, AES-GCM moves the same bytes with about half
/// the CPU, and ssh's CPU is what limits a transfer on a fast link.
const OPENSSH_DEFAULT: &str = "chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com";
/// The same ciphers, AES-GCM first. The server picks the first one of these
/// it accepts, so a server without AES-GCM still gets ChaCha20.
const AES_GCM_FIRST: &str = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr";

/// `ssh [-p PORT] -- [USER@]HOST 'DMV serve --stdio PATH'`, where `ssh` is
/// `DMV_SSH` when set (a command with arguments).
pub(crate) fn serve_command(
    user: Option<&str>,
    host: &str,
    port: Option<u16>,
    path: &str,
    remote_dmv: &str,
) -> Command {
    let ssh = std::env::var("DMV_SSH")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "ssh".into());
    let mut words = ssh.split_whitespace();
    let program = words.next().unwrap_or("ssh").to_string();
    let mut args: Vec<String> = words.map(String::from).collect();
    if let Some(p) = port {
        args.extend(["-p".into(), p.to_string()]);
    }
    let destination = match user {
        Some(u) => format!("{u}@{host}"),
        None => host.to_string(),
    };
    if aes_in_hardware() && ciphers_unconfigured(&program, &args, &destination) {
        args.extend(["-o".into(), format!("Ciphers={AES_GCM_FIRST}")]);
    }
    let mut cmd = Command::new(program);
    // `--`: whatever the destination says, ssh takes it as one.
    cmd.args(args)
        .arg("--")
        .arg(destination)
        .arg(format!("{remote_dmv} serve --stdio {}", shell_quote(path)));
    cmd
}

/// Whether OpenSSH would use its built-in cipher order for this connection:
/// no ssh_config (the user's or the system's) and no `-c` or `-o` names the
/// ciphers. `ssh -G` prints the configuration it would use without
/// connecting. Any other answer (another ssh, an old one, an error) keeps
/// ssh's own choice.
fn ciphers_unconfigured(program: &str, args: &[String], destination: &str) -> bool {
    let Ok(out) = Command::new(program)
        .args(args)
        .arg("-G")
        .arg("--")
        .arg(destination)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return false;
    };
    out.status.success()
        && String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.strip_prefix("ciphers ") == Some(OPENSSH_DEFAULT))
}

fn aes_in_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("aes")
        && std::arch::is_x86_feature_detected!("pclmulqdq");
    #[cfg(target_arch = "aarch64")]
    return std::arch::is_aarch64_feature_detected!("aes")
        && std::arch::is_aarch64_feature_detected!("pmull");
    #[allow(unreachable_code)]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reordered list names exactly OpenSSH's default ciphers: nothing
    /// weaker is offered than ssh would offer on its own.
    #[test]
    fn aes_first_order_offers_the_default_ciphers() {
        let mut a: Vec<&str> = OPENSSH_DEFAULT.split(',').collect();
        let mut b: Vec<&str> = AES_GCM_FIRST.split(',').collect();
        assert!(b[0].starts_with("aes") && b[0].ends_with("-gcm@openssh.com"));
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}
