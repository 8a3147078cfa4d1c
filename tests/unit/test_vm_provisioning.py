"""The Vagrant VM and its provisioning script, checked without a VM.

Nothing here changes the machine: the provisioning script runs in --dry-run
mode (or is sourced for its functions), the Vagrantfile is evaluated by Ruby
against a stand-in for Vagrant's configuration object, and apt validates the
sources file the script would write against temporary directories only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROVISION = REPO / "scripts" / "provision-vm.sh"
SETUP = REPO / "scripts" / "setup.sh"
VAGRANTFILE = REPO / "Vagrantfile"

JAMMY = """\
PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
"""
NOBLE = JAMMY.replace("22.04.4", "24.04.1").replace('"22.04"', '"24.04"').replace("jammy", "noble")
BOOKWORM = """\
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
"""

# Replaces Vagrant while Ruby evaluates the Vagrantfile: every call on the
# configuration object is recorded as {"path", "args", "kw"} and printed as
# JSON. Blocks get a recorder for the provider and one named "override".
RUBY_RECORDER = r"""
require "json"
CALLS = []
class Recorder < BasicObject
  def initialize(path)
    @path = path
  end

  def __path
    @path
  end

  def method_missing(name, *args, **kw, &blk)
    path = "#{@path}.#{name}"
    plain = args.map { |a| ::Recorder === a ? a.__path : a }
    ::CALLS << { "path" => path, "args" => plain, "kw" => kw.map { |k, v| [k.to_s, v] }.to_h }
    child = ::Recorder.new(args.empty? ? path : "#{path}(#{plain.first})")
    blk.call(child, ::Recorder.new("override")) if blk
    child
  end

  def respond_to_missing?(*)
    true
  end
end

module Vagrant
  def self.require_version(*); end

  def self.has_plugin?(*)
    false
  end

  def self.configure(_version)
    yield ::Recorder.new("config")
  end
end

load ARGV.fetch(0)
puts JSON.generate(CALLS)
"""


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.fail(f"{tool} is not installed: run 'sudo make setup' (scripts/setup.sh installs it)")
    return path


def _os_release(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "os-release"
    path.write_text(text)
    return path


def _provision(tmp_path: Path, *args: str, os_release: str = JAMMY, script: Path = PROVISION,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("AIFABRIC_")}
    run_env["AIFABRIC_OS_RELEASE"] = str(_os_release(tmp_path, os_release))
    run_env.update(env or {})
    return subprocess.run(
        ["bash", str(script), *args],
        cwd=tmp_path,  # anywhere but the repository: the script finds it itself
        env=run_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _commands(stdout: str) -> list[str]:
    """The '+ ' lines of a dry run, without the prefix and without file bodies."""
    commands, in_file = [], False
    for line in stdout.splitlines():
        if in_file:
            in_file = line != "EOF"
        elif line.startswith("+ "):
            commands.append(line[2:])
            in_file = line.startswith("+ write ") and line.endswith("<<EOF")
    return commands


def _written_files(stdout: str) -> dict[str, str]:
    """{path: content} of the '+ write PATH <<EOF ... EOF' blocks of a dry run."""
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\+ write (\S+) <<EOF\n(.*?)\nEOF$", stdout, re.M | re.S)
    }


def _apt_state() -> dict[str, list[str]]:
    state = {}
    for folder in ("/etc/apt/sources.list.d", "/etc/apt/keyrings", "/usr/share/keyrings"):
        path = Path(folder)
        state[folder] = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    return state


# --- lint ----------------------------------------------------------------------


def test_shellcheck_passes_on_the_provisioning_and_setup_scripts() -> None:
    shellcheck = _need("shellcheck")
    result = subprocess.run([shellcheck, str(PROVISION), str(SETUP)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_provisioning_script_disables_no_shellcheck_check() -> None:
    assert "shellcheck disable" not in PROVISION.read_text()


def test_provisioning_script_is_strict_bash() -> None:
    text = PROVISION.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in text
    assert os.access(PROVISION, os.X_OK), "scripts/provision-vm.sh should be executable"


def test_vagrantfile_is_valid_ruby() -> None:
    ruby = _need("ruby")
    result = subprocess.run([ruby, "-c", str(VAGRANTFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the Vagrantfile -------------------------------------------------------------


@pytest.fixture(scope="module")
def vagrant_calls(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    ruby = _need("ruby")
    recorder = tmp_path_factory.mktemp("vagrant") / "recorder.rb"
    recorder.write_text(RUBY_RECORDER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFABRIC_")}
    result = subprocess.run(
        [ruby, str(recorder), str(VAGRANTFILE)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _assigned(calls: list[dict], path: str) -> list:
    return [c["args"][0] for c in calls if c["path"] == path]


def test_vagrantfile_names_the_provisioning_script() -> None:
    assert "scripts/provision-vm.sh" in VAGRANTFILE.read_text()


@pytest.mark.parametrize("provider", ["virtualbox", "libvirt"])
def test_vagrantfile_gives_each_provider_4_cpus_and_8_gb(vagrant_calls: list[dict], provider: str) -> None:
    prefix = f"config.vm.provider({provider})"
    assert any(c["path"] == "config.vm.provider" and c["args"] == [provider] for c in vagrant_calls)
    cpus = _assigned(vagrant_calls, f"{prefix}.cpus=")
    memory = _assigned(vagrant_calls, f"{prefix}.memory=")
    assert cpus and all(int(n) >= 4 for n in cpus), cpus
    assert memory and all(int(mb) >= 8192 for mb in memory), memory


def test_vagrantfile_uses_an_ubuntu_2204_box_for_each_provider(vagrant_calls: list[dict]) -> None:
    boxes = _assigned(vagrant_calls, "config.vm.box=") + _assigned(vagrant_calls, "override.vm.box=")
    assert len(boxes) == 2, boxes
    for box in boxes:
        assert re.search(r"ubuntu-?22\.?04", box), box


def test_vagrantfile_syncs_the_repo_at_vagrant(vagrant_calls: list[dict]) -> None:
    synced = [c for c in vagrant_calls if c["path"].endswith(".vm.synced_folder")]
    assert synced
    for call in synced:
        assert call["args"][:2] == [".", "/vagrant"]
        # a one-way rsync would keep results/ from reaching the host
        assert call["kw"].get("type") != "rsync"


def test_vagrantfile_provisions_with_the_script_from_the_synced_folder(vagrant_calls: list[dict]) -> None:
    provisions = [c for c in vagrant_calls if c["path"] == "config.vm.provision"]
    assert len(provisions) == 1, provisions
    kw = provisions[0]["kw"]
    assert kw.get("type") == "shell"
    assert kw.get("privileged", True) is True
    # inline from /vagrant, not `path:` (which uploads the script to /tmp,
    # away from the repository it provisions)
    assert "path" not in kw
    assert kw["inline"].split() == ["bash", "/vagrant/scripts/provision-vm.sh"]


def test_vagrantfile_forwards_no_ports(vagrant_calls: list[dict]) -> None:
    networks = [c for c in vagrant_calls if c["path"].endswith(".vm.network")]
    assert not [c for c in networks if "forwarded_port" in c["args"]], networks


def test_vagrantfile_resources_follow_the_environment(tmp_path: Path) -> None:
    ruby = _need("ruby")
    recorder = tmp_path / "recorder.rb"
    recorder.write_text(RUBY_RECORDER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFABRIC_")}
    env.update(AIFABRIC_VM_CPUS="6", AIFABRIC_VM_MEMORY="12288", AIFABRIC_NO_P4="1")
    result = subprocess.run(
        [ruby, str(recorder), str(VAGRANTFILE)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    calls = json.loads(result.stdout)
    assert _assigned(calls, "config.vm.provider(virtualbox).cpus=") == [6]
    assert _assigned(calls, "config.vm.provider(libvirt).memory=") == [12288]
    provision = next(c for c in calls if c["path"] == "config.vm.provision")
    assert provision["kw"]["env"] == {"AIFABRIC_NO_P4": "1"}


# --- the provisioning script, dry run ------------------------------------------------


@pytest.fixture
def dry_run(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    before = _apt_state()
    result = _provision(tmp_path, "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _apt_state() == before, "a dry run changed /etc/apt"
    return result


def test_dry_run_ends_by_running_setup_sh_from_the_repo(dry_run: subprocess.CompletedProcess[str]) -> None:
    commands = _commands(dry_run.stdout)
    assert commands[-2:] == [f"cd {REPO}", "bash scripts/setup.sh"], commands[-3:]
    assert (REPO / "scripts" / "setup.sh").is_file()


def test_dry_run_installs_mininet_tshark_and_setup_sh_packages_first(
    dry_run: subprocess.CompletedProcess[str],
) -> None:
    # What is already installed is skipped, so read the plan: each wanted
    # package is either in an install command or reported as installed.
    out = dry_run.stdout
    setup_line = re.search(r"^APT_PACKAGES=\((.*)\)$", SETUP.read_text(), re.M)
    assert setup_line, "setup.sh no longer has a one-line APT_PACKAGES=(...)"
    wanted = ["mininet", "tshark", *setup_line.group(1).split()]
    installs = " ".join(c for c in _commands(out) if " install " in f" {c} ")
    already = " ".join(re.findall(r"already installed: (.*)", out))
    for pkg in wanted:
        assert re.search(rf"(^|\s){re.escape(pkg)}(\s|$)", f"{installs} {already}"), pkg
    for cmd in _commands(out):
        if cmd.startswith("apt-get"):
            assert "-y" in cmd.split() and "DPkg::Lock::Timeout" in cmd, cmd


def test_dry_run_preseeds_wireshark_setuid_before_installing(dry_run: subprocess.CompletedProcess[str]) -> None:
    commands = _commands(dry_run.stdout)
    preseed = [i for i, c in enumerate(commands) if c.startswith("debconf-set-selections")]
    assert preseed, commands
    assert "wireshark-common wireshark-common/install-setuid boolean true" in commands[preseed[0]]
    installs = [i for i, c in enumerate(commands) if "apt-get" in c and " install " in c]
    assert all(i > preseed[0] for i in installs)


def test_dry_run_adds_the_p4lang_repository_with_a_keyring(dry_run: subprocess.CompletedProcess[str]) -> None:
    files = _written_files(dry_run.stdout)
    sources = {path: body for path, body in files.items() if path.startswith("/etc/apt/sources.list.d/")}
    if not sources:
        assert "p4lang repository is already configured" in dry_run.stdout
        pytest.skip("this machine already has a p4lang apt source")
    assert len(sources) == 1, sources
    path, body = next(iter(sources.items()))
    assert path.endswith(".list")
    lines = [line for line in body.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == 1, "one deb line, no duplicates"
    m = re.fullmatch(r"deb \[signed-by=(/\S+)\] (https://\S+/) /", lines[0])
    assert m, lines[0]
    keyring, url = m.groups()
    assert keyring.startswith(("/etc/apt/keyrings/", "/usr/share/keyrings/")) and keyring.endswith(".gpg")
    assert url == "https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/"
    commands = _commands(dry_run.stdout)
    key = [c for c in commands if c.startswith("curl ")]
    assert key == [f"curl -fsSL {url}Release.key | gpg --dearmor -o {keyring}"]
    assert not any("apt-key" in c for c in commands)
    # the source comes before the update that reads it, then the packages
    i_source = commands.index(f"write {path} <<EOF")
    i_update = max(i for i, c in enumerate(commands) if c.startswith("apt-get") and c.endswith(" update"))
    i_p4 = next(i for i, c in enumerate(commands) if "p4lang-p4c" in c)
    assert i_source < i_update < i_p4
    for pkg in ("p4lang-p4c", "p4lang-bmv2", "p4lang-pi"):
        assert pkg in commands[i_p4]
    # simple_switch_CLI (queues and the PFC emulation over Thrift) imports
    # Thrift's Python library; it is installed with the toolchain.
    assert any("python3-thrift" in c for c in commands[i_p4:]) or \
        re.search(r"already installed: .*python3-thrift", dry_run.stdout)


def test_the_p4lang_source_is_well_formed_for_apt(dry_run: subprocess.CompletedProcess[str], tmp_path: Path) -> None:
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        pytest.skip("apt-get not available")
    sources = [b for p, b in _written_files(dry_run.stdout).items() if p.startswith("/etc/apt/sources.list.d/")]
    if not sources:
        pytest.skip("this machine already has a p4lang apt source")
    listfile = tmp_path / "p4lang.list"
    listfile.write_text(sources[0] + "\n")
    (tmp_path / "lists" / "partial").mkdir(parents=True)
    (tmp_path / "cache").mkdir()
    # apt's own parser; --print-uris downloads nothing, and every directory it
    # could touch is redirected into tmp_path.
    result = subprocess.run(
        [apt_get, "update", "--print-uris",
         "-o", f"Dir::Etc::SourceList={listfile}", "-o", f"Dir::Etc::SourceParts={tmp_path / 'none'}",
         "-o", f"Dir::State::Lists={tmp_path / 'lists'}", "-o", f"Dir::Cache={tmp_path / 'cache'}",
         "-o", "Debug::NoLocking=1"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "E:" not in result.stderr, result.stderr
    assert "'https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/InRelease'" in result.stdout


def test_dry_run_changes_nothing_and_needs_no_root(dry_run: subprocess.CompletedProcess[str]) -> None:
    assert "dry run" in dry_run.stdout
    assert not dry_run.stderr.strip(), dry_run.stderr


def test_no_p4_skips_the_p4lang_part(tmp_path: Path) -> None:
    for args, env in ((["--no-p4"], {}), ([], {"AIFABRIC_NO_P4": "1"})):
        result = _provision(tmp_path, "--dry-run", *args, env=env)
        assert result.returncode == 0, result.stderr
        assert "p4lang" not in " ".join(_commands(result.stdout))
        assert _commands(result.stdout)[-1] == "bash scripts/setup.sh"


def test_no_p4_also_accepts_ubuntu_2404(tmp_path: Path) -> None:
    result = _provision(tmp_path, "--dry-run", "--no-p4", os_release=NOBLE)
    assert result.returncode == 0, result.stderr
    assert _commands(result.stdout)[-1] == "bash scripts/setup.sh"


@pytest.mark.parametrize(
    ("os_release", "args"),
    [(BOOKWORM, ()), (BOOKWORM, ("--no-p4",)), (NOBLE, ()), (JAMMY.replace("22.04", "18.04"), ("--no-p4",))],
    ids=["debian", "debian-no-p4", "ubuntu-24.04-with-p4", "ubuntu-18.04"],
)
def test_refuses_other_systems_with_one_line_saying_what_is_supported(
    tmp_path: Path, os_release: str, args: tuple[str, ...]
) -> None:
    # Dry runs only: the check comes first in a real run too, but a test must
    # not risk a real run as root on the machine it runs on.
    result = _provision(tmp_path, "--dry-run", *args, os_release=os_release)
    assert result.returncode != 0
    assert result.stdout == "", "it went on before refusing"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "supported: Ubuntu 22.04" in lines[0]


def test_unknown_option_is_refused(tmp_path: Path) -> None:
    result = _provision(tmp_path, "--frobnicate")
    assert result.returncode != 0
    assert "--frobnicate" in result.stderr


def test_help_describes_the_options(tmp_path: Path) -> None:
    result = _provision(tmp_path, "--help")
    assert result.returncode == 0
    for option in ("--no-p4", "--dry-run", "--recreate-venv"):
        assert option in result.stdout


def test_real_run_needs_root(tmp_path: Path) -> None:
    prefix: list[str] = []
    if os.geteuid() == 0:
        # As root a real run would change the machine: run it as nobody.
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop privileges")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    shared = Path(tempfile.mkdtemp(prefix="aifabric-os-release-"))
    try:
        shared.chmod(0o755)
        os_release = shared / "os-release"
        os_release.write_text(JAMMY)
        os_release.chmod(0o644)
        # The checkout may sit where nobody cannot read (a clone under /root
        # is 0700): nobody runs a readable copy of the script.
        script = shared / "scripts" / PROVISION.name
        script.parent.mkdir(mode=0o755)
        shutil.copy2(PROVISION, script)
        script.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIFABRIC_")}
        env["AIFABRIC_OS_RELEASE"] = str(os_release)
        result = subprocess.run(
            [*prefix, "bash", str(script)], cwd="/", env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        shutil.rmtree(shared)
    assert result.returncode != 0
    assert "needs root" in result.stderr, result.stderr
    assert "+ " not in result.stdout, "it ran something before refusing"


# --- the repository from the script's own location, and a foreign .venv ------------


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A stand-in repository: the two scripts, nothing else."""
    root = tmp_path / "elsewhere" / "aifabric"
    (root / "scripts").mkdir(parents=True)
    for script in (PROVISION, SETUP):
        shutil.copy2(script, root / "scripts" / script.name)
    return root


def test_the_repository_is_where_the_script_is(tmp_path: Path, repo_copy: Path) -> None:
    result = _provision(tmp_path, "--dry-run", "--no-p4", script=repo_copy / "scripts" / "provision-vm.sh")
    assert result.returncode == 0, result.stderr
    assert _commands(result.stdout)[-2:] == [f"cd {repo_copy}", "bash scripts/setup.sh"]


def test_a_venv_made_by_another_python_is_refused_or_moved_aside(tmp_path: Path, repo_copy: Path) -> None:
    venv = repo_copy / ".venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = true\nversion = 2.7.18\n")
    script = repo_copy / "scripts" / "provision-vm.sh"

    refused = _provision(tmp_path, "--dry-run", "--no-p4", script=script)
    assert refused.returncode != 0
    assert "--recreate-venv" in refused.stderr and "2.7" in refused.stderr

    for args, env in ((["--recreate-venv"], {}), ([], {"AIFABRIC_RECREATE_VENV": "1"})):
        moved = _provision(tmp_path, "--dry-run", "--no-p4", *args, script=script, env=env)
        assert moved.returncode == 0, moved.stderr
        commands = _commands(moved.stdout)
        assert f"mv {venv} {repo_copy}/.venv.python2.7" in commands
        assert commands[-1] == "bash scripts/setup.sh"
    assert venv.is_dir(), "a dry run moved the venv"


# --- functions, sourced ----------------------------------------------------------


def _source_and_run(snippet: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = f"source {PROVISION}\n{snippet}\n"
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_sourcing_the_script_runs_nothing(tmp_path: Path) -> None:
    result = _source_and_run("echo sourced", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "sourced\n"


def test_write_file_writes_once_and_then_leaves_the_file_alone(tmp_path: Path) -> None:
    target = tmp_path / "p4lang.list"
    line = "deb [signed-by=/etc/apt/keyrings/p4lang.gpg] https://example.invalid/ /"
    result = _source_and_run(
        f"""
        write_file {target} '{line}' && echo first=wrote || echo first=same
        write_file {target} '{line}' && echo second=wrote || echo second=same
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "first=wrote" in result.stdout and "second=same" in result.stdout
    assert target.read_text() == line + "\n"
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir()] == ["p4lang.list"], "no temporary file left behind"


def test_join_or_lists_releases(tmp_path: Path) -> None:
    result = _source_and_run("join_or 22.04; echo; join_or 22.04 24.04; echo; join_or a b c; echo", tmp_path)
    assert result.stdout.splitlines() == ["22.04", "22.04 or 24.04", "a, b or c"]


# --- a real run, twice, in a sandbox ---------------------------------------------

# Stand-ins for the commands that would change the machine or reach the
# network. They log their calls and keep "installed" packages in $STATE.
STUBS = {
    "apt-get": r"""
echo "apt-get $*" >>"$STATE/log"
seen=0
for a in "$@"; do
    if [[ $seen == 1 && $a != -* ]]; then echo "$a" >>"$STATE/installed"; fi
    [[ $a == install ]] && seen=1
done
exit 0
""",
    "dpkg-query": r"""
pkg="${*: -1}"
grep -qxF "$pkg" "$STATE/installed" 2>/dev/null || exit 1
case "$*" in *Status*) printf 'install ok installed' ;; *) printf '1.0' ;; esac
""",
    "debconf-set-selections": r"""cat >>"$STATE/debconf"; echo debconf-set-selections >>"$STATE/log" """,
    "dpkg-reconfigure": r"""echo "dpkg-reconfigure $*" >>"$STATE/log"; touch "$STATE/wireshark-group" """,
    "getent": r"""[[ "$*" == "group wireshark" && -e "$STATE/wireshark-group" ]] || exit 2; echo wireshark:x:120:""",
    "usermod": r"""echo "usermod $*" >>"$STATE/log" """,
    "curl": r"""
echo "curl $*" >>"$STATE/log"
while (($#)); do [[ $1 == -o ]] && { echo "p4lang key" >"$2"; shift; }; shift; done
""",
    "gpg": r"""
echo "gpg $*" >>"$STATE/log"
out=""; while (($# > 1)); do [[ $1 == -o ]] && { out=$2; shift; }; shift; done
cp "$1" "$out"
""",
    "p4c": "echo p4c 1.2.5",
    "p4c-bm2-ss": "echo p4c-bm2-ss 1.2.5",
    "simple_switch_grpc": 'if [[ "${1:-}" == --help ]]; then echo "  --priority-queues arg"; '
                          'else echo 1.15.1; fi',
    "simple_switch_CLI": "echo usage: simple_switch_CLI",
}


def _real_run_setup(tmp_path: Path, repo_copy: Path, stubs_changed: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """Stubs, state, a private /etc/apt: what a real run in a mount namespace
    needs; returns (command, env, state, etc_apt)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare")
    stubs, state, etc_apt = tmp_path / "stubs", tmp_path / "state", tmp_path / "etc-apt"
    stubs.mkdir(), state.mkdir()
    for name, body in {**STUBS, **(stubs_changed or {})}.items():
        (stubs / name).write_text("#!/usr/bin/env bash\n" + body + "\n")
        (stubs / name).chmod(0o755)
    for sub in ("sources.list.d", "trusted.gpg.d"):
        (etc_apt / sub).mkdir(parents=True)
    (etc_apt / "sources.list").write_text("deb http://deb.example.invalid/ubuntu jammy main\n")
    # setup.sh stands in too, keeping the APT_PACKAGES line the script reads.
    packages_line = re.search(r"^APT_PACKAGES=.*$", SETUP.read_text(), re.M)
    assert packages_line
    (repo_copy / "scripts" / "setup.sh").write_text(
        f'#!/usr/bin/env bash\n{packages_line.group(0)}\necho "setup.sh in $PWD" >>"$STATE/log"\n'
    )

    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFABRIC_")}
    env.update(
        PATH=f"{stubs}:{env.get('PATH', '/usr/bin:/bin')}",
        STATE=str(state),
        SUDO_USER="nobody",
        AIFABRIC_OS_RELEASE=str(_os_release(tmp_path, JAMMY)),
    )
    # /etc/apt is a temporary folder inside a private mount namespace only.
    inner = f'mount --bind {etc_apt} /etc/apt && bash {repo_copy / "scripts" / "provision-vm.sh"}'
    return [unshare, "--mount", "--propagation", "private", "bash", "-c", inner], env, state, etc_apt


def _real_run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 and "unshare" in result.stderr:
        pytest.skip(f"no mount namespace here: {result.stderr.strip()}")
    return result


@pytest.mark.root
def test_a_real_run_twice_adds_the_source_once_and_ends_with_setup_sh(tmp_path: Path, repo_copy: Path) -> None:
    command, env, state, etc_apt = _real_run_setup(tmp_path, repo_copy)
    logs = []
    for _ in range(2):
        (state / "log").write_text("")
        result = _real_run(command, env, tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        logs.append((state / "log").read_text().splitlines())
    first, second = logs

    installed = (state / "installed").read_text().split()
    for pkg in ("mininet", "tshark", "shellcheck", "ruby", "p4lang-p4c", "p4lang-bmv2", "p4lang-pi",
                "python3-thrift"):
        assert pkg in installed, pkg
    assert "wireshark-common/install-setuid boolean true" in (state / "debconf").read_text()
    assert "usermod -aG wireshark nobody" in first
    assert first[-1] == f"setup.sh in {repo_copy}"

    sources = sorted(p.name for p in (etc_apt / "sources.list.d").iterdir())
    assert sources == ["aifabric-p4lang.list"]
    body = (etc_apt / "sources.list.d" / "aifabric-p4lang.list").read_text()
    assert body == (
        "deb [signed-by=/etc/apt/keyrings/p4lang.gpg] "
        "https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/ /\n"
    )
    assert (etc_apt / "keyrings" / "p4lang.gpg").read_text() == "p4lang key\n"

    # The second run finds everything in place: no apt-get at all, no new
    # source, and it still ends with setup.sh.
    assert not [line for line in second if line.startswith("apt-get")], second
    assert sorted(p.name for p in (etc_apt / "sources.list.d").iterdir()) == sources
    assert second[-1] == f"setup.sh in {repo_copy}"


@pytest.mark.root
@pytest.mark.parametrize("changed, says", [
    ({"simple_switch_grpc": 'if [[ "${1:-}" == --help ]]; then echo "  --cpu-port arg"; '
                            'else echo 1.15.0; fi'},
     "simple_switch_grpc has no --priority-queues option: aifabric needs BMv2 1.15.1 or later"),
    ({"simple_switch_CLI": "echo 'ModuleNotFoundError: thrift' >&2; exit 1"},
     "simple_switch_CLI does not start"),
    ({"p4c-bm2-ss": "echo 'fabric.p4(12): [--Werror=legacy] error: unknown option' >&2; exit 1"},
     "p4c-bm2-ss cannot compile p4src/fabric.p4: fabric.p4(12): [--Werror=legacy] error: unknown"),
])
def test_a_real_run_stops_on_a_bmv2_it_cannot_use(tmp_path: Path, repo_copy: Path,
                                                  changed: dict[str, str], says: str) -> None:
    command, env, state, _ = _real_run_setup(tmp_path, repo_copy, changed)
    result = _real_run(command, env, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("provision-vm: ") and says in last, result.stderr
    assert "setup.sh" not in (state / "log").read_text()
