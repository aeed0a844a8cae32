"""Validating whole suites, with a cache keyed by everything that could change a verdict.

Proving a task replays several solutions, so a batch should not pay for it again when nothing
the proof depends on has changed. The key hashes the task file and revision, the grader
revision (assertions, constraints, rubric and check code), the fixture, the tools, the
solutions, every file of the suite that belongs to no one task (data files a check or tool
opens), the suite's switches, and the versions of what runs the proof (SQLite, or another
kind's engine such as the PostgreSQL server, Python, Hypothesis, groundstate's own files, the
third-party distributions the suite's checks, tools and environment kind import,
:mod:`~groundstate.validation.packages`); any edit to one of them is a cache miss, and the
task is proven again. (Declared equivalent mutants are part of the task file.)
"""

from __future__ import annotations

import platform
import sqlite3
import sys
from collections.abc import Collection
from contextlib import suppress
from functools import cache
from importlib.metadata import version
from pathlib import Path

import groundstate
from groundstate.environments.registry import environment_kind
from groundstate.environments.sqlite_state import STATE_HASH_REVISION
from groundstate.episode import EnvironmentFactory, default_environment
from groundstate.errors import GroundstateError, one_line
from groundstate.rounding import counted
from groundstate.spec.canonical import hash_path, hash_value
from groundstate.spec.suite import _BUILTIN_TOOLS, BUILTIN, Suite, grader_code_files
from groundstate.spec.task import AgentTask, JudgeAssertion
from groundstate.store import RunStore
from groundstate.validation import hash_order
from groundstate.validation.checks import UNEXERCISED, check_ids, validate_task
from groundstate.validation.packages import distribution_versions, with_requirements
from groundstate.validation.results import CheckOutcome, SuiteValidity, TaskValidity

VALIDATOR_REVISION = 119
"""Bumped whenever the checks change what they prove, or what a cached validity holds, so older
cached verdicts are never read back (2: the ``mutation`` check and its figures; 3: the
``tool_robustness`` check, and reset checked against the fixture's first build; 4: the
``judge_agreement`` check; 5: the ``asks`` mutants, ``random`` skewed in
``grader_determinism``, the oracle's-words agent and outcomes that hold untouched in
``discriminating``; 6: the library's own grading changed what it proves, with no change to a
task's files: numbers matched to 15 digits and expected rows by a maximum matching, the
constraint language's yes and no, the unittest runner's tamper checks; 7: the first grading of
the oracle joins ``grader_determinism``, a solution acting after its user declined does not
prove the task, and fixtures calling ``random()`` or reading the wall clock are refused; 8: the
library's grading again: cells compared by type as the state hash compares them, SQL
``date('now')`` on the task's clock, the unittest runner's own names and the standard library's
modules guarded, the constraint language's yes with the customer's own terms; 11: the library's
grading: a yes giving the customer's reason in negative words, JSON documents and float noise
in state diffs; 12: the constraint language's no to a question whether to go on, and a no that
also says go ahead; ``grader_determinism`` skews the wall clock, and chance as the suite's own
modules bound it, and a failure resting on a replay with no verdict is no longer cached; 13:
``grader_determinism`` reads the rows of queries without ORDER BY reversed in one grading; the
constraint language's yes and no in more words, and what names an address, an item or a payment
method; 14: ``grader_determinism`` grades with no, then every, environment variable set and the
network off for the suite's code, in time zones of UTC+14 and UTC-12, with the trace's times
scaled, and replays with the tools imported anew; and the library's grading: a bare yes to
several questions answers the last, the constraint language's no with a condition in other
languages, a measure named with or without its space, messages read up to a bound, and
arguments past a bound refused by the gateway; 15: ``grader_sensitivity`` grades the oracle's
final state with each table it changed put back as it was, so a table whose change no assertion
reads fails the task; 16: that probe on the postgres kind too, then each of several rows the
oracle changed in one table put back alone, and the postgres kind's fixtures' triggers, views,
generated columns, collations and partial or expression UNIQUE indexes refused instead of
dropped; 17: the library's grading and the retail checks: a yes naming another record, or taken
back in other words ("Cancel that."), amounts with their thousands grouped or the sign after
them, and a claim about several records after fewer changed; 18: the library's grading and the
retail checks: a yes on terms of its own ("Yes, but in size 10"), an id named by its number
without its prefix, a cancel or undo verb alone in other languages taking a yes back, and a
claim that everything, or a record in the past tense, went through while a refused change was
never made; 19: a yes naming one of the records its question listed confirms only that one; 20:
the library's grading and the retail checks: a yes with a "but" clause of terms of its own
("Yes, but purple", "Sure, but the large one") or under a condition in other words ("so long
as", "assuming", "subject to"), the agent's question quoted back, a yes given again, and a
bare "All done." or any other success claim after a refused change the customer was never told
of; 21: the retail checks and τ²'s: a second change of a record with its id spelt another way
("i-1012-1 ", full-width digits), a refund, cancellation or credit judged in any spelling of its
order id, and a second call of a once-per-order τ² tool the tool refused, which the τ² importer
no longer declares equivalent; 22: a go-ahead asking for something first ("tell me the total
first", "before you do, ...") is no yes, a "but" clause stating a value the question and its
records do not say ("the colour is purple") is a term and one restating them ("the socks from
May") is none, and the retail ``p1-one-customer`` fails a change after a failed verification,
after another person says they talk, or verified with details said to be another's; 23: a reply
sent in several user messages is read as one ("Yes." "But only $11."), a go-ahead asking for
something first in Spanish, French, German and Portuguese ("Sí, dime el total primero") is no
yes, a yes referring back ("as I said before") puts no term, and ``p1-one-customer`` reads
another person by a name given as theirs or a relation, in those languages too; 26: a mutant
stopped by the step or time limit is replayed past it instead of counted killed, and ``reset``
is checked with other seeds; 27: a yes put off to a later time ("Yes, tomorrow"), marked as
not meant ("jk", "/s") or reported as another person's ("My husband says yes") is no yes, nor
one put off after it ("Actually, not yet"); 28: the ``exercised`` check, and the outcome
assertions and constraints no replay saw fail kept in a validity; 29: a yes choosing one of
the records its question lists by a description ("the cheaper one", "the second one")
confirms only that one, a plain yes to a question offering a choice confirms none, and a yes
said as a supposition ("I might say yes") or asking for other options is no yes, nor a plain
yes to a last question about another record, and amounts are read in Spanish, French, German
and Portuguese words; 30: the constraint language's ``asks`` read in a question asked in
Spanish, French, German or Portuguese, and the retail policy 9 checks reading one success
claim; 31: ``grader_determinism`` replays each route again after the proof's other replays,
with the tools' chance and wall clock at each end of their range, and ``grader_sensitivity``
grades the oracle's final state with each checked table emptied; 32: ``confirmed`` reads a
choice answered without a yes word as agreeing to the option picked, a yes picking another
option of a choice as no confirmation, and "Are you sure?" "No." as taking the yes back;
33: ``grader_determinism`` skews the streams of the suite's own (``random.Random()``,
``SystemRandom()``, a module's ``_RNG``), ``os.urandom``, ``secrets`` and ``uuid.uuid4`` too,
and fails a check reading a file from outside the suite, and ``grader_sensitivity`` empties
each checked table on the postgres kind; 34: ``grader_determinism`` skews streams of the suite's
own ``random.Random`` subclasses, those held in defaults and closures, and numpy's chance, sees
files an installed library opens for a check, a ``file:`` URI and a folder listed, and takes a
time zone file read by ``zoneinfo`` for no read of the check's; 35: ``confirmed`` reads a choice
offered without a question mark or asked after its options, an option picked with the other
turned down, an amount picked however written, a yes kept to one kind of change, and "Yes, no
receipt needed" as a yes; the retail policy 9 checks read "All good!", hedged and ticked
claims; 36: ``confirmed`` reads "Yes, but not the cancellation" and "Yes, but don't cancel the
beanie" as a yes leaving that kind of change out, "The Visa rather than the gift card" as a
pick, and an amount of a choice in words ("Forty."); τ²'s ``payment-confirmed`` fails a method
the answer did not pick, and the retail example reads a cancellation's reason with τ²'s
words; 37: ``grader_determinism`` gives the suite's code its folder listings in reverse
order in one grading; 41: it dates the suite's files read through an ``os.scandir`` entry or a
descriptor, and skews ``os.environb`` and ``os.path.expandvars``, and bound ``listdir``;
43: it skews the locale's encoding and its names of days and months, dates a file read through
``os.stat(name, dir_fd=...)``, and gives a subprocess the suite's code starts the skewed
variables; ``confirmed`` confirms only the part of a wildcard list a yes keeps to, and a no
about a side matter takes no yes back; 44: ``provenance`` counts only what the user said
before the model response that asked for the call; 45: the retail example's
``only_known_records`` and τ²'s ``known_ids`` and ``authenticated_first`` judge a call by what
the model response that asked for it had been shown; ``confirmed`` reads "Both.", "All of them."
and a go-ahead after a side matter, and ``provenance`` fails an empty value; 46: a step is
paired with the model response that asked for it by its tool and arguments, not its tool's
name alone, and an agent message with the ``talk_to_user`` that said it: the retail example's
``amounts_as_shown`` and ``only_known_records`` judge a message by what its response had been
shown; 47: ``confirmed`` confirms only the items a yes names from the question's own list,
nothing single for "Both." to an either/or, no go-ahead for later under someone else's
condition ("once my wife agrees"), and more casual yeses ("Fine.", "Works for me."); 48: the
retail example's ``p8-no-stored-card-details`` reads a stored card's digits in order across
punctuation, in number words, backwards and into the next message, and more spellings of its
expiry; 49: the
retail example's ``p9-claims-were-made`` reads claims in status lines, tables and ticks, in the
second person, after "at first, but", and a failure reported after a claim; 50:
``grader_determinism`` grades each route once more under another ``PYTHONHASHSEED`` and skews
``id()``, the built-in ``open``'s encoding and ``os.system``/``exec``/``spawn``'s variables;
``judge_agreement`` fails a kappa over fewer than 5 labelled items; 51: the default
``confirmed`` reads a yes deferring to the agent or to policy ("if it helps", "if the socks
qualify"), "Either." to an either/or, "No problem", "I guess so" and "Why not?" as consent, and
a yes asking what the change costs ("will I lose my points?") or answering an extra ("Would you
like a receipt?") as none; 52: the retail example's ``p9-claims-were-made`` reads no claim in a
plan or recap asking for consent, "Refund confirmed!" after a refused refund as one, a negated
subject ("No money has been moved") as telling no change, and claims in Italian and Dutch; 53:
the retail example's ``p8-no-stored-card-details`` reads a card's digits across a few words
("4000, then 0033"), past a list or table counter and in letters drawn like digits ("4OOO"), and
"December 27" as a day; ``p8-no-card-number`` reads more spellings of a security code); 54: the
``extra`` mutants, an unasked change of another record after each write; 55: ``confirmed`` reads
a yes to an extra "once it's done" as none to the change, a cost question, a yes on an "if" and
a yes taken back in other languages, "Sì" as a yes, and a yes reported from someone else
("According to my wife, yes") as none; 56: the retail
example's ``p9-claims-were-made`` reads its status lines when they end in a comma or
are marked by an arrow, brackets, a green circle or a heading, a plan's statuses only those its
consent question asks of, and Spanish and Portuguese impersonal claims and refusals; 57: its
policy 9 checks read a negation in its own clause ("O-1002 — cancelled, you won't be
charged" is a claim), a change told by the goods or money it sends ("Your size 9 pair is on its
way", "Your order will now ship to the new address", "You'll get your $22.00 back"), the
Spanish and Portuguese first person plural ("Cancelamos tu pedido"), "refused" as a denial, and
a refund policy ("Refunds normally show on your card") as no claim; 58: the
retail ``p8-no-stored-card-details`` reads a card's digits behind counters and piece labels
("digit 1 is 4", "the second group is 0033"), across two messages with words at the seam, in
look-alike letters at a number's ends ("OOll 2233"), "it expires Dec 27" after the card, and
fails its first four digits or more said as its start ("starts with 5100", "5100 ****"); 59:
``confirmed`` reads a polite "if possible"/"as you wish" in each language as consent, and a yes
to a question proposing another amount than the change's, or an "also" beside the question,
as none to what the question did not propose; 60: ``confirmed`` reads an amount turned down
with words describing it ("instead of the full $40"), in an aside of what was paid, or in words,
and another option picked by its amount, as no proposal of that amount; 61: the retail policy 9
checks read a status followed or opened by a clause of its own ("O-1002 — cancelled and you
won't be charged", "Not to worry — socks refunded"), money said back ("Your money's back"),
goods sent to a street the initial state has nowhere ("will ship to 200 W Adams Street"),
Portuguese "se" as a condition and Spanish and Portuguese rules in the present ("Cancelamos
pedidos pendientes después de 30 días") as no claim, and goods "on their way" with a negated
subject as telling nothing; 62: a match's ``where`` through ``*`` holds when some element meets
it (not every one; an empty list none), a nested object in ``args`` matches by the members
given, and ``check`` refuses a ``where`` value at a path into ``args`` the tool's schema
refuses; 63: ``confirmed`` reads a pick of a choice whose options share a value by what the
option picked names in the place of the change's ("$22 to your Visa, or $22 as store credit?"
"The Visa."), a list with prices beside its things, an id the dialogue says though no tool
showed it, a term restating the question's ("Ja, als Gutschrift.") and a question about finding
out ("Do you want me to check whether ...?"); 64: the retail policy 9 checks read goods sent to
a place the customer asked for or another than home ("will ship to your office") or to a street
number no order or address had ("to 200 W Adams"), a claim beside a condition, offer or time in
another clause ("Refunded the socks, if you prefer", "After checking, I refunded the socks"), a
claim with its "I" left out, a gerund or nominal status ("Refund of $22.00 completed"), and a
later clause about another record ("..., but the hoodie can't be refunded") as no denial; a rule
("Completed orders are refunded to the original payment method"), "pending your confirmation",
an inverted condition ("Had the refund gone through, ...") and the customer's words said back as
no claim; 65: ``confirmed`` reads a yes naming only a thing the question, the change's values
and the tools' outputs do not say ("Shall I refund the socks?" "Yes, the shirt.") as naming
another thing; 66: the retail policy 9 checks read a claim in the past after an opening
condition ("If you prefer, the socks have been refunded"), "is set", "is sorted", "was able to
get the socks refunded", an exchange told by goods of a colour none of the attempt's orders had
("Your forest green hoodie is on the way", "Switched your hoodie to forest green"), and a city
or unit no order or address had as a new place ("will ship to Evanston", "to Suite 1400"); 67:
a value at a path into ``args`` names the expected value as the tool took it (another
spelling the call's output or writes show as that value, a path written another way),
conditions through the same ``*`` of a match's ``where`` are met by one element together, and
``check`` refuses a pattern asking for spacing normalised text never has (two spaces, ``\n``); 68:
the retail policy 9 checks read goods said now of a new colour or size ("Your hoodie is now
forest green", "Your shoes are size 9 now", "has been switched to forest green") as an
exchange, a place in lower case, a person or another customer's city ("will ship to chicago",
"to Maria", "to your sister", "was sent to", "ships to", "will arrive in") as a new address,
claims in a markdown table's row, across a line break or after a condition of relevance ("In
case you're wondering, ..."), and no longer "to New York" as "to new ..."; 69: names
captured through one ``*`` meet ``before.where`` from one element together, a path through
``..`` names the file, an echo of another argument or a changed column's old value shows no
spelling as taken, and ``check`` reads a pattern's spacing across its groups (refusing
``(refund )( now)`` and a separator between two digits, ``4111 1111``; no longer
``a  b|c``); 70: the retail
policy 9 checks read no place in "to" and a standard ("ships to spec", "made to order", "true to
size") nor after a word owning its "to" ("thanks to Maria"), and read a new place said by the
person receiving the goods ("Maria will receive it"), with "at" or "in" after a verb of the
goods ("It should arrive at your office", "Expect it at the Boston address", "I'll send it to
your office", "It will reach Maria") and a claim with words set off inside it ("is now — as
requested — forest green"); 71: ``confirmed``
reads a yes naming another thing without an article ("Yes, shirt.", "Yes, the shirt one"), a
figure the question does not say ("Yes, 14 Elm Road." to 12 Oak Street), cash, a bank account
or a cheque as another way of paying, and confirms nothing by a yes with words in a script it
does not read ("OK, только рубашку"); 72: an echo of an argument at any depth, in a list or
in a written column is no evidence that a tool took a respelling as the expected value, an
argument added beside the one judged cannot make the record served an echo, and ``check``
refuses a pattern of three digit groups joined by dots or commas ("4,111,1111"); 73:
the retail policy 9 checks read no place in "to"
and a noun of a quality ("ships to tolerance", "to specification") nor after a participle or an
adjective owning its "to" ("finished to tolerance", "faithful to form"), read every person or
place of a list ("Maria and Tomas will receive it", "to Tomas or Evanston"), words set off
inside a claim of any kind ("I have — as requested — refunded the socks") and no claim in a
request of the customer's said back ("You asked that it should ship to Evanston"); 74:
``confirmed`` reads a person addressed after a
yes as naming no thing ("Yes, John."), a noun ending like a comparative as a thing ("the
sweater one"), a yes listing only other things ("Yes, the sweater and the hat") and a street
without a number ("Yes, Elm Road.") as naming another, and confirms nothing by a yes with
words of a Latin-script language it does not read ("Ja, maar alleen het shirt"); 75: a
row the call wrote keyed by the agent's own spelling tells it apart from the expected value
(an honest ``transfer(from: ACC-1, to: acc-1)``), a number written with grouped digits
(``"1,000"``, ``"1.000,00"``) is read as the tool may parse it, and ``check``
refuses a pattern that matches digit groups it cannot count (``\\d{1,4}(,\\d{3})+``); 76: policy 9
reads a short standard or a verb and its object after "to" as no place ("ships to grade", "to
replace your jacket"), a city or a name the customer wrote bearing a quality's ending as one
("to florence"), a person or an office of another's as a new receiver ("his wife", "her
office"), and an anaphor after a place or a request said back as naming it ("You asked that
it ship to Evanston, and it now ships there", "..., and it will"), and the customer's words
quoted as theirs ('Your note says "ship it to my office"'); 77:
``confirmed`` reads a given name in any case as a person addressed ("yes, john"), a word
capitalised alone that no list holds ("Yes, Hoodie.", "Yes, Nike."), a word before "one" only
ending like a describing one ("the sandal one") and an unread tail's article ("Ja, het
shirt") as unread, a list without an article ("Yes, hat and scarf") as naming other things,
the sentences after a plain yes with it ("Yes. Hoodie."), and the default ``no`` a yes ending
in doubt or asking for a moment ("Yes, probably", "Yes. One sec."); 78: the
suite's own replays (oracle, alternatives, known-bad, mutants) run without the watches against
in-process code when no untrusted code has run in the process (``groundstate.untrusted``): a
tool or check of the suite's that rebinds the harness's code is no longer a prohibited
action of the replay; 79: a path into a call's arguments reads below a string the JSON text
of an object or list it holds (a key it repeats with each of its values; too large or deep to
read, the check fails), and ``check`` accepts a path below an argument declared a string; 80: the
reader of a claim of a new address reads a lower-case word in "-ance" or "-ence" after "to" as
a place unless its stem is a quality's ("to torrance", "to clemence"; not "to tolerance"), and
any word the customer wrote after a verb of sending or living, or a tool took or returned as a
place, as a place whatever its ending ("to inverness"), and a plural pronoun after a list of
records as claiming each of them ("I checked the headlamp and the water bottle. They are
refunded."), and the customer's words in quotation marks of any form as theirs ('Your note
says «ship it to Evanston»'); 81: the constraint language's yes followed by an instruction asking
for another thing, option or kind of change ("Yes, make it the blue one", "Yes, exchange it")
confirms nothing, names the conversation gave the user or the agent ("I'm Tariq") are persons
addressed in any case, and a thing named after a first sentence saying more than a plain yes
("Yes, refund it quickly. The hoodie.") is read; 82: the retail checks read cents said beside
dollars ("twenty-two dollars and one cent") and bare "21.99" as amounts, record ids in call
arguments in any spelling, store credit by other names (a voucher, a new gift card, a credit note),
and "#" in an address as punctuation; 83: a capture of a key JSON text repeats with differing values
binds nothing, JSON text in a tool's output is read below, trimmed or re-cased echoes are echoes, a
leading '#' is a spelling, a value the user turned down is not said for provenance; 84: policy 9's
claims read a bare word in "-ness" or "-ity" after "to" as a place unless built on an adjective ("to
trinity"), each state of a clause of two kinds as its own ("The headlamp is refunded and the beanie
is cancelled"), "each", "either" or no subject after a list as each record, "not only ... but" as no
negation, and a change under way, hedged, by "the team", goods that "should be delivered", or an
address's status with its new value as a claim; 85: a yes whose clause opens with another verb and
its object ("Yes, deliver it to my sister", "yes, just do half") or "provided" ("Yes, provided the
fee is waived") confirms nothing, and a reply over 4,096 characters is read whole; 86: a value
turned down after it or by a verb before it is not said, ids with another label are one, and JSON
text in errors and written rows is the value it encodes; 87: retail amounts keep their currency
("22,00 €" is not $22.00), cents said alone are read, a success ends verification tries, a unit
written before its street is the same address; 88: policy 9's claims read an address laid out with
no verb ("Shipping address \u2192 200 W Adams St") as goods sent there, an amount after a change's
label ("Refund issued: $54.04") as the claim's, and a label's value of none ("Refunded: none") as no
claim; 89: a word before the yes read as after it ("Shirt, yes"), a thing sent back or an extra sent
to the user after a yes ("Yes, ship it back") goes with the change, a name given in lower case is a
name; 90: an attempt handed out or taken in by the runner or a pool worker while the harness's code
is rebound (its entry, `_job.run_attempt`, by a thread an agent left) is a prohibited action;
91: a "no" closing the conversation after a yes ("Yes please. No, that's all.") takes no yes
back; 92: nor one closing it in other words ("No, I'm good", "No, that's all I need"); 93: a word
before a yes is a person addressed unless the conversation names it as an item ("Sam, yes"), a thing
after "thanks" is read, a closing no after an unmarked yes takes no yes back; 94: "pounds" alone
among words of money, "twenty-two fifty", "1400-200 W Adams St", guesses at another account before
the first verification still counted; 95: a refund's noun and an amount ("Refund: $22.00")
and an address under a heading are claims, a blockquote of the customer's words is not; 96: a
value taken back after it ("eve@x.com. No, don't use that one.") is not said, JSON among words in
an error is read below it, and JSON text compared whole is the value it encodes; 97: "twenty-two
fifty dollars" is $22.50, not its words added up ($72.00); 98: a fixture's trigger reads and writes
the tables the task's permissions keep from the agent, and a full disk met in a tool call is an
environment failure; 99: pounds qualifying a thing are a weight ("the 22 pound set"), a
currency mark beside an amount in words is read ("twenty-two fifty USD", "EUR twenty-two"),
and a floor or unit compares in any spelling ("14th Floor"); 100: a label of a credit, exchange
or cancellation and its value is a claim, a credit's amount is read, money back named as store
credit is a credit, an address's heading is kept over the lines naming whom goods go to, a
blockquote the customer wrote is theirs; 101: a word capitalised after a yes is a person unless
the conversation names it as an item, one thing a yes names that is an item of the conversation
is a correction ("Yes, the shirt"), an agent's own name is no item; 102: a value disowned further
from it ("eve@x.com is one I'd rather not use") is not said, an "I mean" affirming it keeps it,
JSON encoded twice among an error's words is read, a key repeated or written with dots is read
every way; 103: pounds set off by commas or dashes after an item are a weight, "twenty-two
and fifty cents" is $22.50, a currency after "in" is read, a floor beside the same unit or
said "14 Floor" is the same address; 104: every record an error holds among its words is read
by path, not the longest, a value disowned before it ("my old one was eve@x.com") is not
said; 105: an FTS5 table's settings (its rank) are in the state hash and a call's writes, an
attempt that wrote an FTS5 table is restored on new connections; 106: a word said only as a verb
is no item ("I'll mark it" ... "Yes, Mark"), a capitalised word before a noun ("Nike shoes") or
another record's detail is an item's name, an agent naming itself in lower case ("sam here") is
a name; 107: a credit's label of a balance shown is no claim, nor a change's label of what
it costs ("Exchange: free of charge"); money "now in your account" is a claim; a reply of
markdown marks alone ("**") is graded, not a crash; 108: a list of items priced in pounds, pounds
with pence or "in pounds" are money, pence are pounds', a floor in brackets is a floor; 109: store
credit said held in the account with no "now" ("$10.00 of store credit is on your account") is a
claim, a balance shown not; a change's label after a dash mid-line ("Order O-1001 — Refund: $22.00")
is read; 110: an attempt's database is capped (past it, the agent's tool error), SQLite out of
memory and a lock the harness holds the environment's; a call leaving a virtual table's index out of
step with its rows is refused; 111: a noun's kind ("a grace period") or a verb after a plural
("prices rose") is no item, a thing opening a sentence before what a thing does ("Shirt will ship")
is, a brand opening a sentence names its noun's; 112: an error's record after any number of openings
that are no JSON (an echo holding '{"' many times) is read; a value said to be dead ("my previous
address, eve@x.com, is dead", "... bounces") is not said; an old one given to find the account by
("my old email was eve@x.com, my account is under it") is; 113: "22p" with money near is pence,
centimes are euro cents, "22.50 in sterling" is pounds; "Suite 1400 on the 14th floor", "14/F",
"Floor Fourteen" are "Suite 1400, Floor 14"; a list's item with no determiner ("and hat, 10 pounds")
or called heavy is priced; 114: money back of an amount of more than one digit ("You've got $22.00
back") is a claim, a label's value ends at a field set off mid-line ("Refund: $35.00 \u2014 Store
credit: $5.00"), store credit held up to 80 characters from "account" is; 115: a noun after a plural
kind ("my kids shirt") is an item, a colour alone of another item named ("an olive jacket and a navy
jacket" ... "Yes, Olive" to the navy one) is a correction, as is an item the question says on its
way ("The shirt will ship separately. Shall I refund the hoodie?" "Yes, the shirt"), and a person
arriving at a desk ("Mark should arrive at the desk soon" ... "Yes, Mark") is no item; 116: money
back told of another time ("You got $22.00 off last time", "In March, we refunded you $10") is no
claim, a line's next label after an amount or a bar ("Refund: $35.00 Store credit: $5.00") and a
table's row ("| Refund | $22.00 |") are read; 117: a given name or a word "his" takes up opening a
sentence is a person ("Mark will arrive shortly", "Sam is on his way" ... "Yes, Mark"), and an item
the question says in a state of its own ("The shirt is on backorder" ... "Yes, the shirt" to the
hoodie) another item; words quoted in a question are no yes ('Why did you write "yes, refund it"?');
118: a call leaving an FTS5 table's settings unreadable or refused by FTS5, or an FTS4 table's
totals untrue, is the agent's error, undone; 119: an amount beside any currency's sign but the
dollar's, other currencies' codes and names ("22 rubles", "kr 22") and dollars with another
country's after them ("$22.00 (CAD)") are not dollars; a weight said after a price list is every
amount's; "Suite 1400 on the 14th", "Floor Twenty-One" are floors; "it was 22p" is pence."""


def validation_key(suite: Suite, task: AgentTask) -> str:
    """A hash of everything a task's validity depends on."""
    return hash_value(
        {
            "validator": VALIDATOR_REVISION,
            "sqlite": sqlite3.sqlite_version,
            # What generates tool_robustness's calls, and runs every check.
            "runtime": _runtime(),
            # A cached validity holds state hashes, which mean something else once it changes.
            "state_hash": STATE_HASH_REVISION,
            "task_id": task.task_id,
            "task_revision": task.task_revision,
            "task_file": suite.files.get(f"tasks/{task.task_id}.yaml"),
            "grader_revision": task.grader_revision,
            "fixture": hash_path(suite.fixture_path(task)),
            # Another version of a package the checks, tools or environment kind import may
            # give another verdict on unchanged files.
            "packages": distribution_versions(_python_files(suite, task)),
            "tools": suite.tools_digest,
            "solutions": task.grader_test_manifest,
            "shared_files": _shared_files(suite),
            "mutation_testing": suite.config.mutation_testing,
            "tool_robustness": suite.config.tool_robustness,
            "exercised_checks": suite.config.exercised_checks,
            # The human labels judge_agreement measures against (not part of the grader).
            "judge_labels": {
                a.labels: suite.files.get(a.labels)
                for a in task.outcome_assertions
                if isinstance(a, JudgeAssertion)
            },
            **(
                {"environment_options": suite.config.environment_options}
                if suite.config.environment_options
                else {}
            ),
            # Keys of SQLite suites stay as they were; another kind proves its tasks anew, and
            # again on another version of its engine (a PostgreSQL server given by URL).
            **(
                {}
                if suite.config.environment == "sqlite"
                else {
                    "env": suite.config.environment,
                    "engine": _engine_version(suite.config.environment),
                }
            ),
        }
    )


def _engine_version(kind: str) -> str | None:
    """The version of the engine *kind* runs on, where its builder says it
    (``engine_version()``); None for a kind that does not, or cannot say now (its proofs
    then fail unsettled, and are not cached)."""
    try:
        version = getattr(environment_kind(kind).build, "engine_version", None)
        return None if version is None else str(version())
    except (GroundstateError, ImportError):
        return None


@cache
def _runtime() -> dict[str, object]:
    """The versions of Python and Hypothesis (another Hypothesis generates other calls for
    ``tool_robustness`` from the same seed, another Python other ``random`` draws), the
    digest of groundstate's own files: the library grades every replay (the constraint
    language, row matching, the terminal-reason rules), so another version of it may give
    another verdict on unchanged task files, and is never trusted to remember to bump
    :data:`VALIDATOR_REVISION`; and the versions of the distributions it requires (another
    ``jsonschema`` refuses other calls, another ``pydantic`` reads other files)."""
    python = ".".join(platform.python_version_tuple()[:2])
    library = hash_path(Path(groundstate.__file__).parent)
    return {
        "python": python,
        "hypothesis": version("hypothesis"),
        "groundstate": library,
        "requires": with_requirements("groundstate"),
    }


def _python_files(suite: Suite, task: AgentTask) -> list[Path]:
    """The Python files that grade *task* or run its tools and environment (a built-in tool
    set or kind: its module's file), for the versions of the packages they import."""
    names = grader_code_files(task) | {suite.config.tools}
    files = [suite.root / name for name in sorted(names) if name in suite.files]
    modules = [_BUILTIN_TOOLS.get(suite.config.tools.removeprefix(BUILTIN))]
    with suppress(GroundstateError, ImportError):  # a kind that does not load fails its proofs
        modules.append(environment_kind(suite.config.environment).build.__module__)
    for module in filter(None, modules):
        file = getattr(sys.modules.get(module), "__file__", None) if module else None
        if file is not None:
            files.append(Path(file))
    return files


def _shared_files(suite: Suite) -> dict[str, str]:
    """The hashes of the suite's files that belong to no one task: suite.yaml, the policy, and
    any data file a check or a tool reads at run time (``expected.json`` opened next to
    checks.py, or kept in ``tasks/`` or a task's solutions folder), which no import follows.
    Editing one proves every task again."""
    # a task's own files (its task file, solution files and fixture) are keyed on their own;
    # a fixture may be a folder (workspaces)
    fixtures = {
        suite.fixture_path(task).relative_to(suite.root).as_posix() for task in suite.tasks.values()
    }
    own = {f"tasks/{task_id}.yaml" for task_id in suite.tasks} | {
        f"solutions/{task_id}/{name}.yaml"
        for task_id, solutions in suite.solutions.items()
        for name in solutions
    }
    inside = tuple(f"{fixture}/" for fixture in fixtures)
    return {
        name: sha
        for name, sha in suite.files.items()
        if name not in own and name not in fixtures and not name.startswith(inside)
    }


def validate_suite(
    suite: Suite,
    *,
    store: RunStore | None = None,
    make_env: EnvironmentFactory = default_environment,
    tasks: Collection[str] | None = None,
) -> SuiteValidity:
    """Validate every task of *suite* (or the ids in *tasks*); with a *store*, reuse and
    record cached verdicts.

    The cache assumes the default environment: a custom *make_env* always validates afresh.
    Pass the tasks a batch runs as *tasks*, not a suite cut down to them: a task's key holds
    the suite's files that belong to no task, which another task's files would then join.
    """
    cache = store if make_env is default_environment else None
    chosen = sorted(suite.tasks if tasks is None else set(tasks))
    # one child process grades every task to prove under another PYTHONHASHSEED (not one each)
    # each cached validity read once (it was read here, then again to be returned)
    known = {t: None if cache is None else _cached(cache, _key(suite, t)) for t in chosen}
    unproven = [t for t, validity in known.items() if validity is None]
    with hash_order.for_suite(suite, unproven if make_env is default_environment else []):
        found = [_proven(suite, t, cache, make_env) if v is None else v for t, v in known.items()]
    if suite.config.exercised_checks == "required":
        found = _fail_unexercised_shared(suite, found, cache, make_env)
    return SuiteValidity(suite=suite.name, suite_hash=suite.suite_hash, tasks=found)


def _fail_unexercised_shared(
    suite: Suite,
    found: list[TaskValidity],
    cache: RunStore | None,
    make_env: EnvironmentFactory,
) -> list[TaskValidity]:
    """*found*, with the ``exercised`` check failed in each task that includes a constraint of
    the suite's sets no replay of any task including it made fail (``exercised_checks:
    required``).

    A set's constraint is judged over the suite, so no one task's proof can fail it, and the
    cached validity of a task holds only its own replays' evidence (``shared_failed``): the
    judgement is made here, on every read, from those records. Tasks outside *found* that
    include such a constraint are proven (or read from the cache) too: one of them may be the
    task that exercises it, and a batch of a few tasks must get the verdict the whole suite's
    validation gives them."""
    including: dict[str, list[str]] = {}
    for task_id, task in sorted(suite.tasks.items()):
        for name in check_ids(task, suite)[1]:
            including.setdefault(name, []).append(task_id)
    validities = {v.task_id: v for v in found}
    shared = {name for v in found for name in v.shared_failed or {}}
    for name in sorted(shared):
        for task_id in including.get(name, []):
            if not _shared_failed(validities, name) and task_id not in validities:
                validities[task_id] = _task_validity(suite, task_id, cache, make_env)
    never = {name for name in shared if not _shared_failed(validities, name)}
    return [_with_shared_failure(v, never, including) for v in found]


def _shared_failed(validities: dict[str, TaskValidity], name: str) -> bool:
    """Whether a replay of one of *validities* made the set constraint *name* fail."""
    return any((v.shared_failed or {}).get(name, False) for v in validities.values())


def _with_shared_failure(
    validity: TaskValidity, never: set[str], including: dict[str, list[str]]
) -> TaskValidity:
    """*validity* with its ``exercised`` check failed for each set constraint of *never* it
    includes, naming the constraint and the tasks that include it."""
    mine = sorted(never & set(validity.shared_failed or {}))
    if not mine:
        return validity
    reason = "; ".join(
        f"{name}, of the suite's constraint sets, never failed in a replay of any of the "
        f"{counted(len(including[name]), 'task')} including it ({', '.join(including[name])})"
        for name in mine
    )
    checks = [
        check
        if check.name != "exercised"
        else CheckOutcome(
            name="exercised",
            passed=False,
            detail=f"{check.detail}; {reason}"  # its detail says why already
            if not check.passed
            else f"{reason} (exercised_checks: required; {UNEXERCISED})",
        )
        for check in validity.checks
    ]
    return validity.model_copy(update={"checks": checks})


def ensure_valid(
    suite: Suite, store: RunStore, *, tasks: Collection[str] | None = None
) -> dict[str, TaskValidity]:
    """Each task's validity, proving only the tasks whose key is not in *store* yet."""
    return {v.task_id: v for v in validate_suite(suite, store=store, tasks=tasks).tasks}


class InvalidTasks(GroundstateError):
    """A batch was refused because some of its tasks are not proven valid."""

    listed = True  # a task a line


def require_valid(
    suite: Suite,
    store: RunStore,
    *,
    allow_invalid: bool = False,
    tasks: Collection[str] | None = None,
) -> list[str]:
    """The ids of the suite's invalid tasks (of *tasks*, if given); unless *allow_invalid*,
    refuse them instead.

    The refusal names each task and the checks it failed.
    """
    invalid = [v for v in ensure_valid(suite, store, tasks=tasks).values() if not v.valid]
    if invalid and not allow_invalid:
        lines = [
            one_line(f"  {v.task_id}: " + "; ".join(f"{c.name}: {c.detail}" for c in v.failures))
            for v in invalid
        ]
        raise InvalidTasks(
            f"{counted(len(invalid), 'task')} of suite {suite.name!r} "
            f"{'is' if len(invalid) == 1 else 'are'} not valid "
            "(see `groundstate validate`; --allow-invalid runs them anyway):\n" + "\n".join(lines)
        )
    return [v.task_id for v in invalid]


def _task_validity(
    suite: Suite, task_id: str, store: RunStore | None, make_env: EnvironmentFactory
) -> TaskValidity:
    cached = None if store is None else _cached(store, _key(suite, task_id))
    return _proven(suite, task_id, store, make_env) if cached is None else cached


def _proven(
    suite: Suite, task_id: str, store: RunStore | None, make_env: EnvironmentFactory
) -> TaskValidity:
    """*task_id* validated afresh, and its validity cached in *store* when settled."""
    validity = validate_task(suite, task_id, make_env=make_env)
    if store is not None and validity.settled:  # an unsettled failure is proven again
        store.add_validation(_key(suite, task_id), validity.to_dict())
    return validity


def _key(suite: Suite, task_id: str) -> str:
    return validation_key(suite, suite.tasks[task_id])


def _cached(store: RunStore, key: str) -> TaskValidity | None:
    """The validity cached under *key*, or None when there is none or it cannot be read (a
    record damaged or edited by hand): then the task is proven again, and the record replaced."""
    try:
        record = store.validation(key)
        return None if record is None else TaskValidity.from_dict(record)
    except (ValueError, TypeError, KeyError):  # pydantic's ValidationError is a ValueError
        return None
