"""Where the tests find what lies outside them: the project root and the recorded peer data
beside it (``../shared/peer/``, read in place, never copied into the project)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer"
SNAPSHOTS = ROOT / "src" / "kubemedic" / "data" / "snapshots"
