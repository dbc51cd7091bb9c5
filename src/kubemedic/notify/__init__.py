"""Notifications: incidents, node quarantines, repair holds and Failed-pod storms, sent once per
group to Alertmanager-compatible webhooks, Slack incoming webhooks and generic webhooks, with
an update when a group grows (at most every ``updateEvery``) and a resolve when it ends.

``policy`` is the pure part (subjects and what was sent in, messages out); ``formats`` renders
a message for each kind of receiver (pure); ``subjects`` reads what there is to tell from the
archive; ``sending`` POSTs with timeouts, retries and back-off; ``controller.Notifier`` runs
the rounds inside ``kubemedic run`` and records in the archive what each receiver accepted;
``settings`` reads the ``notify:`` section. docs/notify.md is the operator's description.

May import: :mod:`kubemedic.incidents`, :mod:`kubemedic.store`, :mod:`kubemedic.kube` (its clock
and back-off), :mod:`kubemedic.config`, :mod:`kubemedic.checks`, :mod:`kubemedic.model`,
:mod:`kubemedic.errors`; never the repair or breaker packages (their state comes from the
archive), the simulator or the command line. ``notify.policy`` and ``notify.formats`` do no I/O.
"""

from kubemedic.notify.controller import Notifier, Outcome
from kubemedic.notify.policy import Change, Message, Sent, Status, Subject, SubjectKind, decide
from kubemedic.notify.settings import NotifyRun, Receiver

__all__ = [
    "Change",
    "Message",
    "Notifier",
    "NotifyRun",
    "Outcome",
    "Receiver",
    "Sent",
    "Status",
    "Subject",
    "SubjectKind",
    "decide",
]
