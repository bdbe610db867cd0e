"""The synthetic company's records (people, mailboxes, mails, planted facts), the answer forms, and
`CompanyWriter`: the random source, the company built from `data/company.json`, and the small helpers that write
mails, replies, forwards and planted facts. The threads themselves are in `drill.envs.inbox.stories`; the inbox
and its questions are assembled in `drill.envs.inbox.synthetic`."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from email.header import Header
from email.utils import format_datetime, formataddr
from pathlib import Path

from drill.envs.inbox.store import MailRecord, Recipient

_DATA = Path(__file__).with_name("data") / "company.json"
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().replace(" ", "")


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    title: str
    department: str
    domain: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def address(self) -> str:
        return f"{_ascii(self.first)}.{_ascii(self.last)}@{self.domain}"


@dataclass(frozen=True)
class Mailbox:
    """A list or automated address (all@, travel@, a newsletter) that sends or receives like a person."""

    name: str
    address: str


Party = Person | Mailbox


@dataclass
class Mail:
    message_id: str
    date: datetime
    sender: Party
    to: tuple[Party, ...]
    subject: str
    body: str
    cc: tuple[Party, ...] = ()
    attachments: tuple[str, ...] = ()

    def record(self) -> MailRecord:
        recipients = tuple(Recipient(address=p.address, name=p.name, kind=kind)
                           for kind, people in (("to", self.to), ("cc", self.cc)) for p in people)
        return MailRecord(
            message_id=self.message_id, subject=self.subject, sender=self.sender.address,
            sender_name=self.sender.name, date=self.date.strftime("%Y-%m-%d %H:%M:%S"), body=self.body,
            recipients=recipients, attachments=self.attachments,
            source_hash=hashlib.sha256(f"synthetic:{self.message_id}".encode()).hexdigest(),
        )

    def rfc822(self) -> bytes:
        """The message as RFC 822 bytes: UTF-8 text in 8bit, names RFC 2047-encoded, attachments in base64."""

        def people(parties: tuple[Party, ...]) -> str:
            return ", ".join(formataddr((p.name, p.address), charset="utf-8") for p in parties)

        headers = [f"Message-ID: <{self.message_id}>", f"Date: {format_datetime(self.date)}",
                   f"From: {people((self.sender,))}", f"To: {people(self.to)}"]
        if self.cc:
            headers.append(f"Cc: {people(self.cc)}")
        subject = self.subject if self.subject.isascii() else Header(self.subject, "utf-8").encode()
        headers += [f"Subject: {subject}", "MIME-Version: 1.0"]
        text = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n" + self.body + "\n"
        if not self.attachments:
            return ("\n".join(headers) + "\n" + text).encode()
        boundary = f"=_drill_{self.message_id.split('@')[0]}"
        parts = [text] + [
            f"Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"{name}\"\n"
            f"Content-Transfer-Encoding: base64\n\n{base64.b64encode(f'(contents of {name})'.encode()).decode()}\n"
            for name in self.attachments]
        body = "".join(f"--{boundary}\n{part}" for part in parts) + f"--{boundary}--\n"
        return ("\n".join(headers) + f"\nContent-Type: multipart/mixed; boundary=\"{boundary}\"\n\n{body}").encode()


@dataclass
class Fact:
    """One statement of a fact: the answer it gives to `question`, and the messages that state it."""

    question: str
    kind: str
    answer: str
    aliases: tuple[str, ...]
    sources: list[Mail]

    @property
    def stated_at(self) -> datetime:
        return min(m.date for m in self.sources)

# -- answer forms ----------------------------------------------------------------------------------------


def _date_text(d: date) -> str:
    return f"{d.strftime('%A')}, {_MONTHS[d.month - 1]} {d.day}"


def _date_answer(d: date) -> tuple[str, tuple[str, ...]]:
    month = _MONTHS[d.month - 1]
    return f"{month} {d.day}, {d.year}", (
        f"{month} {d.day}", f"{d.day} {month}", d.isoformat(), f"{d.month}/{d.day}/{d.year}", f"{d.month}/{d.day}",
        f"{month[:3]} {d.day}", f"{d.day} {month[:3]}", f"{d.month:02d}/{d.day:02d}/{d.year}",
    )


def _money(amount: int) -> str:
    return f"${amount:,}"


def _amount_answer(amount: int) -> tuple[str, tuple[str, ...]]:
    return _money(amount), ((f"{amount // 1000}k",) if amount % 1000 == 0 else ())


def _the(place: str) -> str:
    return place if place.startswith("The ") else f"the {place}"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _place_aliases(place: str) -> tuple[str, ...]:
    for prefix in ("Hotel ", "The "):
        if place.startswith(prefix):
            return (place.removeprefix(prefix),)
    for suffix in (" Room", " Hotel"):
        if place.endswith(suffix):
            return (place.removesuffix(suffix),)
    return ()


def _quote(mail: Mail) -> str:
    quoted = "\n".join(f"> {line}" if line else ">" for line in mail.body.splitlines())
    return f"On {format_datetime(mail.date)}, {mail.sender.name} <{mail.sender.address}> wrote:\n{quoted}"


def _forward_text(mail: Mail) -> str:
    to = ", ".join(p.name for p in mail.to)
    return (f"---------- Forwarded message ---------\nFrom: {mail.sender.name} <{mail.sender.address}>\n"
            f"Date: {format_datetime(mail.date)}\nSubject: {mail.subject}\nTo: {to}\n\n{mail.body}")


# -- the generator ---------------------------------------------------------------------------------------


@dataclass
class _Customer:
    name: str
    domain: str
    city: str
    contacts: list[Person] = field(default_factory=list)
    owner: Person | None = None  # the account executive


class CompanyWriter:
    """The company and the mail written so far; `stories.StoryWriter` adds the threads."""

    def __init__(self, seed: int, messages: int) -> None:
        self.rng = random.Random(seed)
        self.target = messages
        self.data = json.loads(_DATA.read_text(encoding="utf-8"))
        self.year: int = self.data["year"]
        self.domain: str = self.data["company"]["domain"]
        self.mails: list[Mail] = []
        self.facts: dict[str, list[Fact]] = {}
        self.never_stated: list[tuple[str, str, datetime]] = []
        self._names = self._name_pool()
        owner = self.data["owner"]
        self.owner = Person(owner["first"], owner["last"], owner["title"], owner["department"], self.domain)
        self.staff: list[Person] = []
        for department, titles in self.data["departments"].items():
            for title in titles:
                first, last = next(self._names)
                self.staff.append(Person(first, last, title, department, self.domain))
        self.by_dept: dict[str, list[Person]] = {}
        for person in self.staff:
            self.by_dept.setdefault(person.department, []).append(person)
        self.ceo, self.cfo, self.coo = self.by_dept["Executive"]
        self.controller = self.by_dept["Finance"][0]
        self.hr = self.by_dept["People"][0]
        customers = list(self.data["customers"])
        self.rng.shuffle(customers)
        self.customers = [_Customer(c["name"], c["domain"], c["city"]) for c in customers[:14]]
        self.reserved_customers = [c["name"] for c in customers[14:18]]
        sales = [p for p in self.by_dept["Sales"] if p.title in ("Account Executive", "Senior Account Executive")]
        for i, customer in enumerate(self.customers):
            customer.owner = sales[i % len(sales)]
            for title in ("VP of Supply Chain", "Logistics Director", "Head of Procurement", "COO"):
                if len(customer.contacts) < 2 and self.rng.random() < 0.7:
                    first, last = next(self._names)
                    customer.contacts.append(Person(first, last, title, "customer", customer.domain))
            while len(customer.contacts) < 2:
                first, last = next(self._names)
                customer.contacts.append(Person(first, last, "Operations Manager", "customer", customer.domain))
        projects = list(self.data["projects"])
        self.rng.shuffle(projects)
        self.projects, self.reserved_projects = projects[:8], projects[8:12]
        self.reserved_people = [Person(*next(self._names), "Analyst", "Operations", self.domain) for _ in range(4)]
        self.all_staff = [self.owner, *self.staff]
        self.everyone = Mailbox("All Kestrel", f"all@{self.domain}")
        self._counter = 0

    # -- small helpers ---------------------------------------------------------------------------------

    def _name_pool(self):  # type: ignore[no-untyped-def]
        firsts, lasts = list(self.data["first_names"]), list(self.data["last_names"])
        combos = [(f, last) for f in firsts for last in lasts]
        self.rng.shuffle(combos)
        used_first: set[str] = set()
        used_last: set[str] = set()
        taken: set[tuple[str, str]] = set()
        for first, last in combos:  # first pass: every first and last name used once
            if first not in used_first and last not in used_last:
                used_first.add(first)
                used_last.add(last)
                taken.add((first, last))
                yield first, last
        for combo in combos:
            if combo not in taken:
                yield combo

    def pick(self, items):  # type: ignore[no-untyped-def]
        return items[self.rng.randrange(len(items))]

    def day(self, start: int = 0, end: int = 364) -> date:
        """A weekday of the year, `start`..`end` days after January 1."""
        d = date(self.year, 1, 1) + timedelta(days=self.rng.randint(start, end))
        while d.weekday() >= 5:
            d += timedelta(days=1)
        return d

    def moment(self, d: date) -> datetime:
        return datetime(d.year, d.month, d.day, self.rng.randint(13, 22), self.rng.randrange(60), tzinfo=UTC)

    def later(self, when: datetime, min_hours: float = 0.3, max_hours: float = 30.0) -> datetime:
        return when + timedelta(minutes=int(self.rng.uniform(min_hours, max_hours) * 60))

    def mail(self, when: datetime, sender: Party, to: list[Party], subject: str, body: str,
             cc: list[Party] | None = None, attachments: tuple[str, ...] = ()) -> Mail:
        self._counter += 1
        message_id = f"{self._counter:05d}.{self.rng.getrandbits(48):012x}@mail.{self.domain}"
        mail = Mail(message_id=message_id, date=when, sender=sender, to=tuple(to), subject=" ".join(subject.split()),
                    body=body, cc=tuple(cc or ()), attachments=attachments)
        self.mails.append(mail)
        return mail

    def reply(self, original: Mail, sender: Party, text: str, when: datetime | None = None,
              to: list[Party] | None = None) -> Mail:
        subject = original.subject if original.subject.startswith("Re: ") else f"Re: {original.subject}"
        recipients = to or [original.sender]
        cc = [p for p in (*original.to, *original.cc) if p != sender and p not in recipients]
        return self.mail(when or self.later(original.date), sender, recipients, subject,
                         f"{text}\n\n{_quote(original)}", cc=cc)

    def forward(self, original: Mail, sender: Party, to: list[Party], note: str) -> Mail:
        return self.mail(self.later(original.date, 0.5, 20), sender, to, f"Fwd: {original.subject}",
                         f"{note}\n\n{_forward_text(original)}")

    def fact(self, question: str, kind: str, answer: str | tuple[str, tuple[str, ...]], sources: list[Mail],
             aliases: tuple[str, ...] = ()) -> None:
        """Record that `sources` state `answer` to `question`; `answer` may come with its aliases as a pair."""
        if isinstance(answer, tuple):
            answer, aliases = answer
        self.facts.setdefault(question, []).append(Fact(question, kind, answer, aliases, list(sources)))

    def sign(self, person: Person) -> str:
        return f"{person.first}\n--\n{person.name}\n{person.title}, Kestrel Dynamics"

    def colleagues(self, n: int, exclude: tuple[Person, ...] = ()) -> list[Person]:
        pool = [p for p in self.staff if p not in exclude]
        return self.rng.sample(pool, n)

    # -- phrasing ----------------------------------------------------------------------------------------

    def say_date(self, d: date, sent: datetime) -> str:
        """One of the ways people write a date in mail; some need the message's own date to resolve."""
        month = _MONTHS[d.month - 1]
        options = [f"{d.strftime('%A')}, {month} {d.day}", f"{month} {d.day}", f"{month[:3]} {d.day}",
                   f"{d.month}/{d.day}", f"{d.day} {month}"]
        if 0 < (d - sent.date()).days <= 20:
            options.append(f"{d.strftime('%A')} the {_ordinal(d.day)}")
        return self.pick(options)

    def say_money(self, amount: int) -> str:
        options = [f"${amount:,}", f"USD {amount:,}", f"${amount:,}.00"]
        if amount % 1000 == 0 and amount >= 10000:
            options.append(f"${amount // 1000}k")
        return self.pick(options)

