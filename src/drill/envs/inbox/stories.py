"""The threads of the synthetic company inbox, each planting facts: quarterly business reviews, trips,
deals, purchases, hires, project status reports whose launch dates slip, offsites; then newsletters and
everyday chatter to fill the inbox. `generate` in `drill.envs.inbox.synthetic` calls them in a fixed order:
the order is part of the generated inbox."""

from __future__ import annotations

from datetime import date, timedelta

from drill.envs.inbox.company import (
    _MONTHS,
    CompanyWriter,
    Mailbox,
    Person,
    _amount_answer,
    _ascii,
    _date_answer,
    _date_text,
    _money,
    _place_aliases,
    _the,
)


class StoryWriter(CompanyWriter):
    """`CompanyWriter` with the threads that plant the facts."""

    # -- planted-fact threads --------------------------------------------------------------------------

    def qbrs(self) -> None:
        rooms = self.data["rooms"]
        for customer in self.customers:
            assert customer.owner is not None
            ae = customer.owner
            for quarter in range(1, 5):
                if self.rng.random() < 0.15:
                    continue
                q = f"Q{quarter}"
                meeting = self.day(90 * (quarter - 1) + 20, 90 * (quarter - 1) + 80)
                sent = self.moment(meeting - timedelta(days=self.rng.randint(10, 30)))
                room, time = self.pick(rooms), self.pick(self.data["meeting_times"])
                contact = self.pick(customer.contacts)
                team = [self.owner, *self.colleagues(2, (ae,))]
                when = self.say_date(meeting, sent)
                line = self.pick([
                    f"The {q} quarterly business review with {customer.name} is set for {when} at {time} in the "
                    f"{room}.",
                    f"I booked the {room} for our {q} QBR with {customer.name}: {when}, {time}.",
                    f"{customer.name} confirmed {when} at {time} for the {q} business review. Room: {room}.",
                ])
                body = (f"Hi all,\n\n{line} {contact.name} ({contact.title}) and {self.rng.randint(1, 3)} others from "
                        f"their side will attend.\n\nAgenda: renewal outlook, open support tickets, and the "
                        f"{self.pick(self.data['company']['products'])} roadmap.\n\n{self.sign(ae)}")
                invite = self.mail(sent, ae, team, self.pick([f"{q} QBR with {customer.name}",
                                                              f"{customer.name} {q} business review"]), body)
                sources = [invite]
                if self.rng.random() < 0.5:
                    sources.append(self.reply(invite, self.pick(team[1:]), "Thanks, I'll be there and will bring the "
                                              "support metrics."))
                due = meeting - timedelta(days=self.rng.choice([2, 3, 4]))
                self.mail(self.moment(due - timedelta(days=self.rng.randint(2, 6))), ae, team,
                          f"Slides due: {q} QBR with {customer.name}",
                          f"Reminder: slides for the {q} QBR with {customer.name} are due "
                          f"{self.say_date(due, sent)}. Please use the new template.\n\n{ae.first}")
                ask_when = self.pick([f"When is the {q} QBR with {customer.name}?",
                                      f"What date is the {q} quarterly business review with {customer.name}?"])
                ask_where = f"Which room is the {q} quarterly business review with {customer.name} in?"
                self.fact(ask_when, "date", _date_answer(meeting), sources)
                self.fact(ask_where, "place", room, sources, _place_aliases(room))
                if self.rng.random() < 0.3:  # the customer asks to move it
                    moved = meeting + timedelta(days=self.rng.choice([-7, 2, 7, 14]))
                    while moved.weekday() >= 5:
                        moved += timedelta(days=1)
                    note_sent = self.later(sent, 48, 200)
                    new_when = self.say_date(moved, note_sent)
                    note = self.mail(note_sent, ae, team, f"Moved: {q} QBR with {customer.name}", self.pick([
                        f"Heads up: {customer.name} asked to move the {q} QBR. New date: {new_when}, same time "
                        f"({time}), still in the {room}.",
                        f"New date for the {q} QBR with {customer.name}: {new_when}. Time and room unchanged "
                        f"({time}, {room}).",
                    ]) + f"\n\n{self.sign(ae)}")
                    self.fact(ask_when, "date", _date_answer(moved), [note])
                    self.fact(ask_where, "place", room, [note], _place_aliases(room))

    def trips(self, count: int) -> None:
        cities = self.data["cities"]
        travellers = [p for p in self.staff if p.department in ("Sales", "Operations", "Engineering", "Marketing")]
        seen: set[tuple[str, str]] = set()
        while len(seen) < count:
            person, city = self.pick(travellers), self.pick(cities)
            if (person.name, city["name"]) in seen:
                continue
            seen.add((person.name, city["name"]))
            self._trip(person, city)

    def _trip(self, person: Person, city: dict[str, str | list[str]]) -> None:
        city_name = str(city["name"])
        hotels = list(city["hotels"])
        customer = self.pick(self.customers)
        purpose = self.pick(self.data["trip_purposes"]).format(customer=customer.name, city=city_name)
        depart = self.day(10, 350)
        back = depart + timedelta(days=self.rng.randint(1, 4))
        airline = self.pick(self.data["airlines"])
        flight = f"{airline['code']}{self.rng.randint(100, 2999)}"
        hotel = self.pick(hotels)
        cost = self.rng.randint(9, 64) * 100 + self.rng.choice([0, 40, 75])
        booked = self.rng.random() > 0.15
        sent = self.moment(depart - timedelta(days=self.rng.randint(7, 25)))
        out, home = self.say_date(depart, sent), self.say_date(back, sent)
        stay = self.pick([f"I'll be staying at {_the(hotel)}", f"I booked a room at {_the(hotel)}",
                          f"the hotel is {_the(hotel)}"]) if booked else self.pick([
                          "I'll sort out the hotel once the agenda is final", "the hotel is not booked yet"])
        body = self.pick([
            f"I'd like to fly to {city_name} on {out} to {purpose}, returning {home}. I'm on {airline['name']} flight "
            f"{flight}, and {stay}. Estimated total cost is {self.say_money(cost)}.\n\nCan you approve?",
            f"Requesting approval for a {city_name} trip, {out} to {home}, to {purpose}.\n\nFlight: {airline['name']} "
            f"{flight}\nHotel: {hotel if booked else 'not booked yet'}\nEstimate: {self.say_money(cost)}\n\nThanks!",
            f"Could I get your OK to travel to {city_name}? Plan: fly out {out} on {flight}, back {home}; {stay}. "
            f"All in, about {self.say_money(cost)}. The goal is to {purpose}.",
        ])
        request = self.mail(sent, person, [self.owner], self.pick([
                            f"Travel request: {city_name}, {_MONTHS[depart.month - 1][:3]} {depart.day}",
                            f"Travel request: {city_name}", f"Trip to {city_name} — approval needed"]),
                            f"Hi Dana,\n\n{body}\n\n{self.sign(person)}")
        approval = self.reply(request, self.owner, self.pick([
            "Approved. Safe travels!", "Approved — thanks for keeping it under budget.",
            "Approved. Please send me a short trip report."]))
        sources = [request, approval]
        who = person.name
        self.fact(f"What date does {who} fly to {city_name}?", "date", _date_answer(depart), sources)
        self.fact(f"What is the estimated cost of {who}'s trip to {city_name}?", "amount", _amount_answer(cost),
                  sources)
        hotel_q = f"Which hotel is {who} staying at in {city_name}?"
        if booked:
            self.fact(hotel_q, "place", hotel, sources, _place_aliases(hotel))
            if self.rng.random() < 0.2:
                other = self.pick([h for h in hotels if h != hotel])
                change = self.reply(approval, person, self.pick([
                    f"Small change: {_the(hotel)} was full, so I'm now at {_the(other)}.",
                    f"FYI I switched hotels — staying at {_the(other)} instead, it's closer to the site."]),
                    when=self.later(approval.date, 20, 120), to=[self.owner])
                self.fact(hotel_q, "place", other, [change], _place_aliases(other))
        else:
            self.never_stated.append((hotel_q, "place", sent))
        if self.rng.random() < 0.6:
            code = "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
            itinerary = self.mail(
                self.later(approval.date, 2, 40), Mailbox("Kestrel Travel Desk", f"travel@{self.domain}"),
                [person], self.pick([f"Itinerary confirmation {code}", f"Your {city_name} trip is booked"]),
                f"Traveller: {who}\nConfirmation code: {code}\nOutbound: {airline['name']} {flight}, "
                f"{_date_text(depart)}, Boston (BOS) to {city_name} ({city['airport']})\nReturn: {_date_text(back)}\n\n"
                f"Changes: reply to this message at least 24 hours before departure.",
                cc=[self.owner],
            )
            self.fact(f"What is the confirmation code for {who}'s {city_name} itinerary?", "code", code, [itinerary])
            sources = [*sources, itinerary]
        self.fact(f"What flight is {who} taking to {city_name}?", "code", flight, sources,
                  (f"{flight[:2]} {flight[2:]}",))
        if self.rng.random() < 0.5:  # the actual spend, which is not the estimate
            actual = cost + self.rng.choice([-1, 1]) * self.rng.randint(1, 9) * 45
            filed = self.moment(back + timedelta(days=self.rng.randint(2, 10)))
            self.mail(filed, Mailbox("Expense Bot", f"expenses@{self.domain}"), [self.owner],
                      f"Expense report ER-{self.rng.randint(10000, 99999)} awaiting approval",
                      f"{who} submitted an expense report for the {city_name} trip: {self.say_money(actual)} in total, "
                      f"{self.rng.randint(3, 14)} receipts.\n\nApprove or reject in the expenses portal.")

    def deals(self) -> None:
        products = self.data["company"]["products"]
        for customer in self.customers:
            assert customer.owner is not None
            ae = customer.owner
            for product in self.rng.sample(products, self.rng.randint(1, 3)):
                signed = self.day(15, 340)
                amount = self.rng.randint(18, 420) * 1000 + self.rng.choice([0, 0, 500])
                years = self.rng.choice([1, 2, 3])
                contact = self.pick(customer.contacts)
                golive = signed + timedelta(days=self.rng.randint(20, 70))
                while golive.weekday() >= 5:
                    golive += timedelta(days=1)
                when = self.moment(signed)
                live, worth = self.say_date(golive, when), self.say_money(amount)
                line = self.pick([
                    f"Great news: {customer.name} signed the {years}-year {product} agreement this morning, worth "
                    f"{worth} in total. It was signed on their side by {contact.name}, their {contact.title}. Go-live "
                    f"is planned for {live}.",
                    f"{customer.name} is signed! {years}-year {product} contract, total value {worth}. Signatory: "
                    f"{contact.name} ({contact.title}). Target go-live: {live}.",
                    f"Closed-won: {customer.name} ({product}, {years} years) for {worth}. {contact.name}, their "
                    f"{contact.title}, countersigned today; we go live {live}.",
                ])
                announce = self.mail(when, ae, self.by_dept["Sales"][:3], f"Signed: {customer.name} {product}",
                                     f"Team,\n\n{line}\n\nThanks to everyone who helped on the security review.\n\n"
                                     f"{self.sign(ae)}", cc=[self.ceo])
                if self.rng.random() < 0.5:  # Dana only sees it as a forward
                    sources = [self.forward(announce, ae, [self.owner],
                                            "FYI, Dana: this one will need onboarding capacity from your team.")]
                else:
                    announce.cc = (*announce.cc, self.owner)
                    sources = [announce]
                self.fact(f"How much is the {customer.name} {product} agreement worth?", "amount",
                          _amount_answer(amount), sources)
                self.fact(f"Who signed the {product} agreement on behalf of {customer.name}?", "name", contact.name,
                          sources)
                self.fact(f"When is the {customer.name} {product} go-live planned?", "date", _date_answer(golive),
                          sources)

    def purchases(self, count: int) -> None:
        items = list(self.data["purchase_items"])
        self.rng.shuffle(items)
        vendors = [v["name"] for v in self.data["vendors"]]
        for n, item in enumerate(items[:count]):
            person = self.pick(self.by_dept["Operations"])
            vendor = self.pick(vendors)
            amount = self.rng.randint(6, 600) * 50
            sent = self.moment(self.day(5, 330))
            request = self.mail(sent, person, [self.owner], f"Purchase request: {item}", self.pick([
                f"Hi Dana,\n\nWe need {item}. The best quote is from {vendor} at {self.say_money(amount)} including "
                f"delivery.\n\nOK to go ahead?",
                f"Dana,\n\nAsking for sign-off on {item}. Three quotes; {vendor} is cheapest at "
                f"{self.say_money(amount)}.\n\nThanks",
            ]) + f"\n\n{self.sign(person)}")
            approver = self.cfo if amount > 15000 else self.owner
            if approver == self.cfo:
                ask = self.forward(request, self.owner, [self.cfo],
                                   "This is over my $15,000 limit — can you approve? I support it.")
                approve = self.reply(ask, self.cfo, "Approved.", to=[self.owner])
            else:
                approve = self.reply(request, self.owner, self.pick(["Approved, go ahead.", "OK from me."]))
            po = f"PO-{self.year % 100}-{(n * 37 + 101) % 900 + 100:04d}"
            issued = self.later(approve.date, 4, 60)
            order = self.mail(issued, self.controller, [person], f"{po} issued: {item}", self.pick([
                f"Hi {person.first},\n\nPurchase order {po} has been issued to {vendor} for {item}, "
                f"{self.say_money(amount)}, approved by {approver.name}. Invoices should quote the PO number.",
                f"Hi {person.first},\n\n{po} is out to {vendor} ({item}), total {self.say_money(amount)}. "
                f"Sign-off: {approver.name}.",
                f"Hi {person.first},\n\nRaised {po} for {item} with {vendor}: {self.say_money(amount)}. "
                f"{approver.name} approved it on {self.say_date(approve.date.date(), issued)}.",
            ]) + f"\n\n{self.sign(self.controller)}", cc=[self.owner])
            self.fact(f"Who approved the purchase of {item}?", "name", approver.name, [order])
            self.fact(f"What is the PO number for {item}?", "code", po, [order])
            self.fact(f"What was the approved amount for {item}?", "amount", _amount_answer(amount), [request, order])
            self.fact(f"Which vendor is supplying {item}?", "name", vendor, [request, order])
            if self.rng.random() < 0.5:  # the invoice total includes shipping and tax: not the approved amount
                total = amount + self.rng.randint(3, 40) * 25
                billing = Mailbox(f"{vendor} Billing", f"billing@{_ascii(vendor)}.example")
                self.mail(self.later(issued, 100, 600), billing, [self.owner], f"Invoice for {po}",
                          f"Please find attached our invoice for {po} ({item}). Amount due: {self.say_money(total)} "
                          f"including shipping and tax, net 30.", attachments=(f"invoice-{po}.pdf",))

    def hires(self, count: int) -> None:
        it = Mailbox("Kestrel IT", f"it@{self.domain}")
        for _ in range(count):
            first, last = next(self._names)
            title = self.pick(self.data["new_hire_titles"])
            office = self.pick(self.data["offices"])
            manager = self.pick([self.owner, *self.by_dept["Operations"][:2], *self.by_dept["Engineering"][3:4],
                                 *self.by_dept["Sales"][5:6]])
            start = self.day(20, 355)
            while start.weekday() != 0:
                start += timedelta(days=1)
            new = Person(first, last, title, "new", self.domain)
            sent = self.moment(start - timedelta(days=self.rng.randint(5, 14)))
            starts = self.say_date(start, sent)
            line = self.pick([
                f"Please welcome {new.name}, who joins us as {title} on {starts}. {first} will be based in our "
                f"{office} office and will report to {manager.name}.",
                f"{new.name} starts {starts} as our new {title}, working from the {office} office and reporting to "
                f"{manager.name}.",
                f"Big welcome to {new.name} ({title}), joining {manager.name}'s team on {starts} in {office}.",
            ])
            announce = self.mail(sent, self.hr, [self.everyone], f"Welcome {new.name}!",
                                 f"Hello everyone,\n\n{line}\n\nSay hi when you see them!\n\n{self.sign(self.hr)}")
            sources = [announce]
            if self.rng.random() < 0.4:
                reminder_sent = self.later(sent, 24, 96)
                sources.append(self.mail(reminder_sent, it, [manager], f"New starter: {new.name}",
                                         f"{new.name} starts {self.say_date(start, reminder_sent)}. Laptop and badge "
                                         f"will be at the {office} front desk.", cc=[self.owner]))
            self.fact(f"When does {new.name} start at Kestrel?", "date", _date_answer(start), sources)
            self.fact(f"Which office will {new.name} work from?", "place", office, sources)
            self.fact(f"Who will {new.name} report to?", "name", manager.name, [announce])

    def projects_threads(self) -> None:
        pms = self.by_dept["Engineering"][7:9] + [self.by_dept["Operations"][0]]
        goals = list(self.data["project_goals"])
        self.rng.shuffle(goals)
        vendors = self.data["vendors"]
        for index, project in enumerate(self.projects):
            pm = pms[index % len(pms)]
            team = [self.owner, *self.colleagues(3, (pm,))]
            launch = self.day(150, 330)
            budget = self.rng.randint(8, 90) * 5000
            kickoff = self.moment(self.day(5, 60))
            budget_q = f"What is the approved budget for Project {project}?"
            launch_q = f"What is the planned launch date for Project {project}?"
            intro = self.mail(kickoff, pm, team, f"Project {project} kickoff", self.pick([
                f"Hi all,\n\nProject {project} starts this week. The goal: {goals[index]}. The approved budget is "
                f"{self.say_money(budget)} and we are targeting a launch on {self.say_date(launch, kickoff)}.",
                f"Team,\n\nKicking off Project {project} ({goals[index]}). Budget: {self.say_money(budget)}. Target "
                f"launch: {self.say_date(launch, kickoff)}.",
            ]) + f"\n\n{self.sign(pm)}")
            self.fact(budget_q, "amount", _amount_answer(budget), [intro])
            self.fact(launch_q, "date", _date_answer(launch), [intro])
            if self.rng.random() < 0.25:
                budget += self.rng.randint(2, 12) * 5000
                raised = self.mail(self.later(kickoff, 300, 1500), self.cfo, [pm], f"{project} budget",
                                   f"Finance approved the increase: the {project} budget is now "
                                   f"{self.say_money(budget)}.\n\n{self.cfo.first}", cc=[self.owner])
                self.fact(budget_q, "amount", _amount_answer(budget), [raised])
            month = kickoff.month + 1
            while month <= 12 and date(self.year, month, 1) < launch:
                first = (date(self.year, month, 1) - date(self.year, 1, 1)).days
                when = self.moment(self.day(first, first + 6))
                if self.rng.random() < 0.25:
                    launch = launch + timedelta(days=self.rng.choice([7, 14, 21]))
                    while launch.weekday() >= 5:
                        launch += timedelta(days=1)
                    line = self.pick([f"Launch moved to {self.say_date(launch, when)} (integration testing ran long).",
                                      f"We're slipping launch to {self.say_date(launch, when)}."])
                else:
                    line = self.pick([f"Launch date unchanged: {self.say_date(launch, when)}.",
                                      f"Still on track for launch on {self.say_date(launch, when)}."])
                status = self.mail(when, pm, team, f"{project} status — {_MONTHS[month - 1]}",
                                   f"Status for Project {project}, {_MONTHS[month - 1]}:\n\n- Progress: about "
                                   f"{self.rng.randint(10, 95)}% of the plan delivered\n- Risks: "
                                   f"{self.pick(['vendor lead times', 'staffing', 'data quality', 'scope creep'])}"
                                   f"\n- {line}\n\n{self.sign(pm)}",
                                   attachments=(f"{project.lower()}-status-{month:02d}.pdf",))
                self.fact(launch_q, "date", _date_answer(launch), [status])
                month += 1
            for service in self.rng.sample(sorted({v["service"] for v in vendors}), 2):
                vendor = self.pick([v["name"] for v in vendors if v["service"] == service])
                cost = self.rng.randint(4, 60) * 1000
                start = kickoff.timetuple().tm_yday
                pick = self.mail(self.moment(self.day(start, start + 60)), pm, team, f"{project}: {service} vendor",
                                 self.pick([
                                     f"We've selected {vendor} for {service} on Project {project}. Their contract "
                                     f"comes to {self.say_money(cost)}.",
                                     f"Going with {vendor} for {project} {service} ({self.say_money(cost)}). Legal "
                                     f"has the paperwork."]) + f"\n\n{self.sign(pm)}")
                self.fact(f"Which vendor was selected for {service} on Project {project}?", "name", vendor, [pick])
                self.fact(f"How much is the {service} contract for Project {project}?", "amount",
                          _amount_answer(cost), [pick])

    def offsites(self) -> None:
        venues = list(self.data["venues"])
        self.rng.shuffle(venues)
        for index, department in enumerate(["Operations", "Sales", "Engineering", "Marketing", "Finance", "People"]):
            head = self.owner if department == "Operations" else self.by_dept[department][0]
            venue = venues[index]
            when = self.day(120, 300)
            sent = self.moment(when - timedelta(days=self.rng.randint(20, 45)))
            to = self.by_dept[department] if head == self.owner else [self.owner, *self.by_dept[department]]
            note = self.mail(sent, head, to, f"{department} offsite",
                             f"Hi team,\n\nOur {department} offsite will be at {venue['name']} in {venue['city']} on "
                             f"{self.say_date(when, sent)}. A bus leaves the Boston office at 8:00 AM.\n\n"
                             f"{self.sign(head)}")
            rsvp = when - timedelta(days=self.rng.randint(7, 12))
            self.mail(self.later(sent, 24, 120), head, to, f"RSVP: {department} offsite",
                      f"Please RSVP for the offsite by {self.say_date(rsvp, sent)} so we can confirm numbers with the "
                      f"venue.\n\n{head.first}")
            self.fact(f"Where is the {department} team offsite being held?", "place", venue["name"], [note])
            self.fact(f"When is the {department} team offsite?", "date", _date_answer(when), [note])

    # -- everything else ---------------------------------------------------------------------------------

    def newsletters(self, budget: int) -> None:
        companies = self.data["newsletter_companies"]
        cities = [c["name"] for c in self.data["cities"]]
        lines = self.data["newsletter_items"]
        start = date(self.year, 1, 1)
        letters = self.data["newsletters"]
        sent = 0
        for day_number in range(0, 366):
            today = start + timedelta(days=day_number)
            for letter in letters:
                weekend_daily = letter["cadence"] == 1 and today.weekday() >= 5
                if sent >= budget or day_number % letter["cadence"] or weekend_daily:
                    continue
                items = []
                for _ in range(self.rng.randint(3, 6)):
                    d = today + timedelta(days=self.rng.randint(1, 40))
                    items.append("* " + self.pick(lines).format(
                        c=self.pick(companies), c2=self.pick(companies), city=self.pick(cities),
                        m=_money(self.rng.randint(2, 900) * 10000), d=f"{_MONTHS[d.month - 1]} {d.day}",
                        n=self.rng.randint(3, 97)))
                if letter["address"].endswith(self.domain):
                    items.append(f"* Shout-out to the team that closed {self.pick(self.customers).name} — "
                                 f"more in the all-hands.")
                    items.append(f"* Project {self.pick(self.projects)} is hiring internally; talk to your manager.")
                body = (f"{letter['name']} — {today.strftime('%B')} {today.day}, {today.year}\n\n" + "\n".join(items)
                        + "\n\nYou are receiving this because you subscribed. Unsubscribe: reply STOP.")
                self.mail(self.moment(today), Mailbox(letter["name"], letter["address"]), [self.owner],
                          f"{letter['name']}: {self.pick(items)[2:60]}", body)
                sent += 1

    def chatter(self, budget: int) -> None:
        """Everyday mail: notifications, calendar, IT and HR notices, ops threads, customer questions, social."""
        noise = self.data["noise"]
        tracker = Mailbox("Kestrel Tracker", f"tracker@{self.domain}")
        calendar = Mailbox("Calendar", f"calendar@{self.domain}")
        notifiers = [Mailbox("Kestrel IT", f"it@{self.domain}"), self.hr,
                     Mailbox("Expensify Bot", f"expenses@{self.domain}")]
        while len(self.mails) < self.target and budget > 0:
            budget -= 1
            roll = self.rng.random()
            d = self.day(0, 364)
            when = self.moment(d)
            topic = self.pick(noise["topics"]).format(q=self.rng.randint(1, 4))
            if roll < 0.22:
                key = f"OPS-{self.rng.randint(100, 4999)}"
                self.mail(when, tracker, [self.owner], f"[{key}] {topic.capitalize()}",
                          f"{self.pick(self.staff).name} {self.pick(noise['tracker_verbs'])} {key}.\n\n"
                          f"\"{self.pick(noise['tracker_comments'])}\"\n\n"
                          f"View the issue: https://tracker.{self.domain}/{key}")
            elif roll < 0.36:
                meeting, verb = self.pick(noise["meetings"]), self.pick(noise["calendar_verbs"])
                self.mail(when, calendar, [self.owner],
                          f"{verb}: {meeting} @ {_date_text(d)} {self.pick(self.data['meeting_times'])}",
                          f"{self.pick(self.staff).name} — {verb.lower()}\n\n{meeting}\nWhen: {_date_text(d)}\n"
                          f"Where: {self.pick(self.data['rooms'])}, Boston\nOrganizer: {self.pick(self.staff).name}")
            elif roll < 0.44:
                self.mail(when, self.pick(notifiers), [self.everyone], self.pick(noise["notices"]),
                          f"Hi all,\n\n{self.pick(noise['notice_lines'])} This affects "
                          f"{self.pick(self.data['offices'])} on {_date_text(d)}.\n\nThanks")
            elif roll < 0.72:
                people = self.colleagues(self.rng.randint(1, 3))
                opener = self.pick([
                    f"Can we look at the {topic} before Thursday? The numbers from last week look off.",
                    f"Quick update on {topic}: we are at {self.rng.randint(60, 99)}% of target, spend "
                    f"{_money(self.rng.randint(5, 90) * 100)} this week.",
                    f"I drafted a proposal for {topic}. Comments welcome by {_date_text(d + timedelta(days=3))}.",
                    f"Do you have ten minutes for {topic}? {self.pick(self.customers).name} raised it again.",
                ])
                subject = topic.capitalize() if self.rng.random() < 0.5 else f"Question: {topic}"
                thread = self.mail(when, people[0], [self.owner, *people[1:]], subject,
                                   f"Hi Dana,\n\n{opener}\n\n{self.sign(people[0])}")
                for _ in range(self.rng.randint(0, 2)):
                    sender = self.pick([self.owner, *people])
                    if sender != thread.sender:
                        thread = self.reply(thread, sender, self.pick(noise["replies"]))
            elif roll < 0.82:
                customer = self.pick(self.customers)
                contact = self.pick(customer.contacts)
                assert customer.owner is not None
                ask = self.pick(noise["customer_asks"]).format(n=f"INV-{self.rng.randint(10000, 99999)}")
                self.mail(when, contact, [customer.owner], f"{customer.name}: {ask}",
                          f"Hello,\n\nWe have {ask}. Could someone get back to us this week?\n\nBest,\n"
                          f"{contact.name}\n{contact.title}, {customer.name}", cc=[self.owner])
            elif roll < 0.92:
                person = self.pick(self.staff)
                self.mail(when, person, [self.owner], self.pick(noise["social_subjects"]),
                          f"{self.pick(noise['social_greetings'])}\n\n{self.pick(noise['social_lines'])}\n\n"
                          f"{person.first}")
            else:
                vendor = self.pick(self.data["vendors"])["name"]
                self.mail(when, Mailbox(f"{vendor} Sales", f"sales@{_ascii(vendor)}.example"), [self.owner],
                          self.pick(noise["vendor_subjects"]),
                          f"Hi Dana,\n\n{vendor} helps operations teams like yours save time. Book a demo this month "
                          f"and get {self.rng.randint(10, 40)}% off the first year.\n\nThe {vendor} team")


