"""Hard process constraints and the matches they use: the language of ``C_j(trace)``.

The reference is ``docs/constraints.md``; ``groundstate.grading.constraints`` evaluates them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from groundstate.spec.strict import (
    MAX_STEPS,
    Count,
    Id,
    JsonScalar,
    Strict,
    StrictBool,
    SuiteRef,
    one_key_of,
    own_default,
)
from groundstate.trace import ErrorClass

TOOL_ROOTS = ("args", "output", "error", "error_class", "tool", "ok")
"""Where a path into a tool call starts (``args.order_id``, ``output.items.*.item_id``,
``error_class``: who caused a failed call, e.g. ``permission_denied``)."""
MESSAGE_ROOTS = ("text", "role")
"""Where a path into a message starts."""
_YES_WORDS = (
    r"yes+|yeah|yea|yep|yup|affirmative|go ahead|go for it|please do|please proceed|"
    r"(you can|you may) proceed|let's (do it|go ahead|proceed)|sounds good|that works|"
    r"that's (right|correct)|that is (right|correct)|fine by me|i confirm|confirmed|i agree|"
    r"agreed|go on then|fine (by|with) me|works for me|(that|this|it)('s| is) (fine|great|perfect)"
    r"(?! (?:for|as|but|the|if|with|to|until|now)\b)|you bet|mm+-?hm+|mhm+|uh-huh|okie[- ]?dokie"
    r"|okey[- ]?dokey"
)
_OPENING_YES = (
    r"sure|ok|okay|alright|all right|absolutely|definitely|certainly|of course|exactly|"
    r"correct(?! me)|right(?! (now|away|there|here|after|before|then|to|of|on)\b)|"
    r"fine(?! (print|line|arts?|china|dining|wine|tuning|details?|points?)\b)|"
    r"(great|perfect|cool|deal|gladly|very well|please)(?=[\W_]*$|[.!,;] )|"
    r"(sounds|looks) (great|fine|perfect|ok|okay|good)|"
    r"confirm(?! \w)|proceed|do it|(please )?(cancel|refund|return|exchange|process|submit) "
    r"(it|them|those|these)|s[íì]|oui|ja|sim"
    # an unaccented "si" is a yes as a clause of its own or before a go-ahead ("Si, procedi",
    # "si grazie"), not opening a condition ("Si mi esposa está de acuerdo": "if my wife...")
    r"|si(?=[\W_]*$|[.!,;:)] |[\W_]+(grazie|procedi|procedere|prego|certo|certamente|va bene"
    r"|ok|okay|per favore|perfetto|vai|fallo|fai pure|claro|gracias|adelante|hazlo|por favor"
    r"|dale|vale|merci|bitte|please|thanks|thank you)\b)"
    r"|(no (problem|problems|worries)|not a problem|(that's|that is|it's|it is) (no|not a) problem"
    r"|no objections?|i have no objections?|(i )?(don't|do not) mind|i (guess|suppose)( so)?)"
    r"( at all)?(?=[\W_]*$|[.!,;] )"
    r"|((please )?(do|cancel|refund|return|exchange|process|submit) )?(both|all of (them|these"
    r"|those)|(them|these|those) (both|all))( of (them|these|those))?( (are|is) (fine|ok|okay"
    r"|good))?(?=[\W_]*$|[.!,;)]| (please|thanks|thank you|yes|yeah)\b)"
)
"""Words that agree only as the reply's first word, after any markdown or quote marks ("Sure,
go ahead", "**Absolutely.**", "> Confirm.", "Cancel it.", not "I was sure", "I need to
confirm with my wife", "Confirm the amount" or "Right now I'm busy"); the usual yes of a few
other languages ("Sí", "Oui", "Ja", "Sim") with it; and all of what was asked taken, as a
clause of its own ("Both, please", "All of them.", "Refund both.", "Both are fine"; not "Both
were fine until I washed them"); a casual or reluctant yes as a clause of its own ("No
problem.", "No worries", "Not a problem, go ahead", "I don't mind.", "I guess so."; not "I
don't mind waiting")."""
_OTHER_YES = r"^[\W_]*((y|k+)[\W_]*$|はい)|[\U0001f44d\u2705\u2714]"
"""A reply that is a bare "y" or "k" or opens with "はい", or a thumbs-up or tick sign
anywhere ("👍")."""
_WHY_NOT = r"^[\W_]*((sure|ok|okay|yes|yeah|well),? )?why not(?=[\W_]*$|[.!?,;] )"
""""Why not?" as a clause of its own opening the reply: a yes, asked or not ("Sure, why not";
not "Why not the gift card?")."""
_ADDRESSED = r"([^\W\d_][\w'-]*,[\W_]*)?"
"""One word and a comma before the reply's first yes: a person addressed or an interjection
("Sam, sure", "Oh, ok", "Ana, sí"), read as that yes opening the reply."""
YES_PATTERN = rf"\b({_YES_WORDS})\b|^[\W_]*{_ADDRESSED}({_OPENING_YES})\b|{_OTHER_YES}|{_WHY_NOT}"
"""The default ``confirmed.yes``, on normalised text: the scripted user's "Yes, please go
ahead." and the usual ways a person agrees ("Sure", "OK", "Please proceed", "Sounds good",
"Absolutely", "Of course", "Confirm"), after a name or an interjection too ("Sam, sure")."""
_ITEM = r"(it|them|these|those|one|ones)"
_REASON = (
    r"((fit|fits|fitted|work|works|worked)\b|(need|needed|use|used|wear|wore|want|wanted|like|"
    rf"liked)( {_ITEM})?( any ?more| at all)?(?=[.,;:!)]|$| (anyway|either|though|now)\b))"
)
"""What a customer says of the item when saying yes: the reason for the change ("I no longer
need it", "I don't want them anymore", "they never fit", "it doesn't work"), not a refusal of
the change ("I don't want it refunded", "I don't need the refund", "I never said yes")."""
EXTRA_WORDS = (
    r"receipt|confirmation|email|e-mail|copy|paperwork|call|text|sms|bag|box|label|printout"
    r"|survey|update|notification|reminder"
)
"""What a customer may say they don't need beside the yes ("Yes, I don't need a receipt"): the
one list of extras, which the ``confirmed`` reader's side matters
(``groundstate.grading.constraints._dialogue``) extend with the mail a customer stops."""
_EXTRAS = rf"({EXTRA_WORDS})s?"
_IDIOMS = (
    r"(?! (problem|problems|worries|objections?|trouble|bother|rush|hurry|joke|kidding|lie"
    r"|hay (problema|prisa)|pasa nada|te preocupes)\b)"
    rf"(?! longer {_REASON})"
    rf"(?! ((need|call) (for |of )?)?((a|an|any|the|my) )?{_EXTRAS}\b)"
    r"(?! need (for you )?to (email|e-mail|call|text|mail|send|print|ring|notify|contact)\b)"
)
"""After "no": reassurance, not refusal ("Yes, no problem", "Yes please, no rush", "Sí, no hay
problema"), nor the reason for the change ("Yes, I no longer need it"), nor an extra declined
("Yes, no receipt needed", "Yes, no need for a receipt", "Yes please, no need to email me";
"no need to refund it" is a no)."""
_CLOSING = (
    r"((,? (thanks|thank you))?[,.!:;-]* ?(((that('s| is|'ll be| will be)|thats)"
    r" (all|it|everything)|nothing (else|more|further))( (i|we) (need|needed|want|wanted))?"
    r"|(i'm|im|i am|we're|we are) (good|fine|all set|set|all good)|all (good|set))"
    r"|( other| more| further) (changes?|questions?|requests?))"
    r"( for (now|today))?(,? (thanks|thank you))?(?=[\W_]{0,40}$|[.!?;]+ )"
)
_ENDS_A_YES = (
    "yes yeah yep yup sure ok okay please ahead proceed it thanks you fine great perfect"
    " s\u00ed oui"
)
_AFTER_A_CLAUSE = r"(?<![.!?,;\u2600-\u27bf\U0001f300-\U0001faff] )" + "".join(
    rf"(?<!\b{word} )" for word in _ENDS_A_YES.split()
)
_NOT_CLOSING = rf"({_AFTER_A_CLAUSE}|(?!(no|nope|nah){_CLOSING}))"
"""A "no" that closes the conversation after the yes before it ("Yes, go ahead. No, nothing
else.", "Yes please. No, that's all.", "Yes, please proceed. No other changes.", "Yes please.
No, I'm good.", "No, that's all I need", "Nope, all set"): said after a clause of its own (a
mark or an emoji before it, or unmarked after a word ending a yes: "yes go ahead no that's
all", "yes please no thats it thanks") and saying nothing more, it answers "anything else?"
and takes no yes back. A "no" opening the reply ("No, that's all"), after any other word
("Yes... actually no, I'm good") or going on ("No, that's all wrong", "yes go ahead no
don't", "No, nothing else to change but don't refund it yet") is read as ever."""
_ASKING_FOR = (
    r"(tell|check|show|let me know|confirm|verify|explain|give me|quote|calculate|double[- ]check"
    r"|make sure|find out|look up|send me|email me|what's|what is|how much"
    r"|(want|need|like|have) to (know|see|hear))"
)
"""What a customer asks the agent for before a go-ahead ("tell me the total first")."""
# "First" and "before" in the other languages of the default yes (Spanish, French, German,
# Portuguese), for the go-ahead that asks for something first (see _TERMS): a word of "first"
# that may name nothing else ("primero", "d'abord", "zuerst"), one that may also mean
# "earlier" ("antes", "avant", "vorher", "erst"), a request ("dime", "dites-moi", "sag mir",
# "diga-me", "¿cuánto...?") and what it asks for ("el total", "den Betrag").
_FIRST = r"(primero|primeramente|d'abord|en premier|premi[èe]rement|zuerst|zun[äa]chst|primeiro)"
_EARLIER = r"(antes|avant|vorher|erst)"
_ASKING_ELSEWHERE = (
    r"(d[ií]me|d[ií]game|d[ií]ganme|cu[ée]ntame|conf[ií]rma(me)?|conf[ií]rmeme|confirme|verifica"
    r"|verifique|comprueba|compruebe|revisa|revise|mu[ée]stra(me)?|mu[ée]streme|expl[ií]ca(me)?"
    r"|expl[ií]queme|calcula|calcule|quiero saber|necesito saber|cu[áa]l|cu[áa]nto|qu[ée]"
    r"|dites[- ]moi|dis[- ]moi|confirmez[- ]moi|confirmez|confirme[- ]moi|v[ée]rifiez|v[ée]rifie"
    r"|montrez[- ]moi|montre[- ]moi|expliquez[- ]moi|explique[- ]moi|calculez|je veux savoir"
    r"|je voudrais savoir|j'aimerais savoir|quel(le)?s?|combien"
    r"|sag mir|sagen sie mir|nenn mir|nennen sie mir|best[äa]tige|best[äa]tigen sie|pr[üu]fe?"
    r"|pr[üu]fen sie|[üu]berpr[üu]fe?|zeig mir|zeigen sie mir|erkl[äa]re?|wie ?viel|welche[rs]?"
    r"|ich (will|m[öo]chte) wissen"
    r"|diga[- ]me|me diga|me diz|diz[- ]me|verifica|mostre|me mostre|explique|quanto|qual"
    r"|quero saber|preciso saber)"
)
_ASKED_ELSEWHERE = (
    r"((el|la|le|den|die|das|o|a) )?(total|monto|importe|precio|costo|coste|montant|prix|co[uû]t"
    r"|betrag|preis|summe|kosten|gesamtbetrag|valor|pre[çc]o|custo|talla|taille|gr[öo](ß|ss)e"
    r"|tamanho)"
)
_ACTING_ELSEWHERE = (
    # "antes de hacerlo", "avant de le faire", "bevor Sie das machen", "antes de processar"
    r"antes de (que )?(lo |la )?(hacer|haga|hagas|proceder|proceda|procesar|procese|continuar"
    r"|contin[uú]e|seguir|siga|reembolsar|reembolse|devolver|cancelar|cancele|cambiar|cambie"
    r"|confirmar|fazer|fa[çc]a|prosseguir|prossiga|processar|processe|trocar|troque)"
    r"(lo|la|los|las|-lo|-la)?\b"
    r"|antes que (voc[êe] )?(fa[çc]a|prossiga|continue|processe|lo hagas|lo haga)\b"
    r"|avant (de |d')(l'|le |la |les )?(faire|proc[ée]der|traiter|continuer|rembourser|annuler"
    r"|[ée]changer|valider|confirmer|effectuer)\b|avant (que|qu') ?(vous|tu|on)\b"
    r"|bevor (du|sie|ihr|wir) (es |das |dies )?(tust|tun|machst|machen|fortf[äa]hrst|fortfahren"
    r"|weitermachst|weitermachen|erstattest|erstatten|stornierst|stornieren|tauschst|tauschen"
    r"|bearbeitest|bearbeiten|abschlie(ß|ss)t|abschlie(ß|ss)en)\b"
)
_TOLD_ELSEWHERE = (
    # "después de que me digas el total", "une fois que vous m'aurez dit", "nachdem Sie mir"
    r"(despu[ée]s de que|cuando|una vez que|en cuanto) me (digas|diga|confirmes|confirme"
    r"|muestres|muestre|expliques|explique)\b|despu[ée]s de decirme"
    r"|(apr[èe]s que|quand|une fois que|d[èe]s que|lorsque) (vous m'aurez|vous me (direz|dites"
    r"|confirmerez)|tu m'auras|tu me (diras|dis))|apr[èe]s m'avoir"
    r"|(nachdem|sobald) (du|sie) mir\b"
    r"|(depois que|quando|assim que|logo que) (voc[êe] )?me (disser|diga|confirmar|mostrar"
    r"|explicar)\b|depois de me (dizer|confirmar|mostrar)"
)
_DEFERRED_ELSEWHERE = (
    # a clause opening with "first" and asking ("Sí, primero dime el total", "Oui, d'abord,
    # quel est le total ?", "Ja, zuerst den Betrag bitte"); "antes" and the like only with a
    # request ("Sí, antes dime el total", not "Sí, antes era más caro"); the marks between the
    # opening and "first" are bounded (40), so that a reply of "; ; ; ..." is read in linear
    # time (each of its openings scanned the marks to the end: quadratic)
    rf"(^|[.!?,;:¡¿]|\b(y|et|und|e|pero|mais|aber|mas|luego|puis)\b)[\W_]{{0,40}}+({_FIRST}\b"
    r"[^.!?;]{0,80}"
    rf"\b({_ASKING_ELSEWHERE}|{_ASKED_ELSEWHERE})|{_EARLIER}\b[,:]?[\W_]*{_ASKING_ELSEWHERE})\b"
    # a request then "first" ("dime el total primero", "sag mir zuerst", "dime antes el total")
    rf"|\b{_ASKING_ELSEWHERE}\b([^.!?;]{{0,80}}\b{_FIRST}|( (me|moi|mir))? {_EARLIER})\b"
    rf"|\b({_ACTING_ELSEWHERE})|\b({_TOLD_ELSEWHERE})"
    # "before that" near the reply's start ("Oui, avant cela, quel est le total ?")
    r"|^[\W_]*(\w+\W+){0,3}(antes de (eso|esto)|avant (cela|ça|ceci)|davor|antes disso)\b"
)
_WEEKDAYS = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_LATER = (
    r"(tomorrow|later( on| today| this (week|month))?|next (week|month|time|year|" + _WEEKDAYS + ")"
    r"|another (day|time)|some other (day|time)|tonight|this (evening|afternoon|weekend)"
    r"|(on |this )?" + _WEEKDAYS + r"|in (a|an|one|two|three|a few|a couple( of)?|\d+) (minutes?"
    r"|hours?|days?|weeks?|months?)|not (now|today|yet))"
)
"""A time later than now, for a yes put off to it ("Yes, tomorrow", "OK, next week")."""
KIN = (
    r"(husband|wife|partner|spouse|son|daughter|mom|mum|mother|dad|father|friend|boss|brother"
    r"|sister|kids?|family|manager|roommate|boyfriend|girlfriend|fianc[eé]e?|assistant"
    r"|colleague|neighbou?r)"
)
_CLAUSE_ENDS = (
    r"(?=[\W_]*($|[.!?,;:)]|(please|thanks|thank you|then|of course|go ahead|proceed|do it)\b))"
)
_GOOD = (
    r"(easier|easiest|simpler|simplest|quicker|quickest|faster|fastest|best|better|ok|okay|fine"
    r"|alright|all right|no trouble|no bother|not too much trouble|not a problem|no problem"
    r"|convenient|more convenient|all the same to you|what you (recommend|suggest|advise|think"
    r"|think is best)|what it takes|how it works|the (best|easiest|fastest|quickest|simplest"
    r"|usual|normal|standard|right|recommended|only) (option|way|thing|choice|route|process"
    r"|procedure|one)|standard|the process|the procedure|the policy|needed|necessary|required"
    r"|possible|a good idea|wise|sensible|the way to go)"
)
_SUBJECT = (
    r"(it|that|this|they|these|those|i|we|(the|my|your|our|these|those) [\w'-]+( [\w'-]+)?"
    r"|socks|items?|shoes|(this|that) (one|order|item))"
)
_FOR_A_CHANGE = r"( for (it|that|this|them|one|(a|the) (refund|return|exchange|credit)))?"
_DEFERRING_IF = (
    # the agent's judgment or ease: "if you think that's best", "if you say so", "if it
    # helps", "if that works for you", "if that's easier"
    r"((you|u) (think|believe|feel|say|recommend|suggest|advise|reckon)( (so|it|that|this))?"
    rf"|(you|u) (think|believe|feel|reckon) (it|that|this)('s| is| would be|'d be|'ll be"
    rf"| will be) {_GOOD}"
    r"|(it|that|this)( (would|will|'ll|'d|does|really|actually|should))? (help|helps|work|works"
    r"|suit|suits)( (for|with) (you|everyone|everybody|your (side|end|team|system)))?"
    r"( (better|best))?"
    rf"|(it|that|this)('s| is| would be|'d be|'ll be| will be| seems?) {_GOOD}( (for|with|to)"
    r" (you|your (side|end|team|system)))?"
    # the rules the agent may only act within anyway: "if the socks qualify", "if it's within
    # policy", "if the store allows it", "if I'm eligible"
    rf"|{_SUBJECT}( still)? (qualify|qualifies|count|counts){_FOR_A_CHANGE}"
    rf"|{_SUBJECT}('s| is| are|'re| am|'m| would be| will be)( still)? (eligible|allowed"
    r"|permitted|covered|qualified|refundable|returnable|exchangeable|in policy|within (the |your"
    r" )?(policy|return window|window|return period|warranty|warranty period|rules|guidelines"
    r"|terms|time limit|limits?)|under (the |your )?(policy|warranty)|(ok|okay|fine|allowed)"
    rf" (by|under|per|with|according to) (the |your )?(policy|rules|store|system)){_FOR_A_CHANGE}"
    r"|(the |my |your )?(return |refund )?(window|period|warranty) is( still)? (open|valid|active)"
    r"|(the |your )?(store|shop|policy|system|rules|company|terms|warranty) (allows?|permits?"
    r"|lets? you|covers?)( (it|that|this|them|you|one))?"
    rf"){_CLAUSE_ENDS}"
)
"""What an "if" may defer to and stay consent, ending its clause: the agent's judgment or ease
("Sure, if it helps", "Yes, if that works for you", "OK if you think that's best") or the
rules the agent acts within anyway ("Yes, if the socks qualify", "Go ahead if it's within
policy", "Do it if the store allows it"); not a fact of the user's world ("if my wife
agrees", "if it arrives today", "if it's the full price")."""
_DEFERRING_IF_ELSEWHERE = (
    # "Sí, si es posible", "Oui, si vous voulez", "Ja, wenn es geht", "Sì, se ti va bene",
    # "Sim, se puder", "Ja, als dat kan": the agent's ease or judgment, as _DEFERRING_IF;
    # with the verb last too ("Ja, wenn es möglich ist", "Ja, als dat mogelijk is", "Oui, si
    # cela est possible"), and "Sí, si se puede", "Sí, si puede ser", "Sì, se si può", "Sim,
    # se der", "Ja, als dat lukt", "Ja, als dat goed is"
    r"(((es|das|dat|het|cela|ça|ce|isso|ciò) )?(es |fuera |sea |c'est |est |es |ist |for |è |e "
    r"|het |dat )?(posible|possible|m[öo]glich|poss[ií]vel|possibile|mogelijk)( (ist|is|est|è"
    r"|é|sei|sein sollte|zou zijn))?|se puede|puede ser|se pudiera|si pu[oò]|der( certo)?"
    r"|(dat|het) (lukt|goed is|mag)|(puedes|puede|pueden|quieres|quiere|prefieres|prefiere"
    r"|vous (pouvez|voulez|pr[ée]f[ée]rez)|tu (peux|veux)|(du|sie) (kannst|k[öo]nnen|willst"
    r"|wollen|m[öo]chtest|m[öo]chten)|(voc[êe] )?(pode|puder|quiser|preferir)|puoi|pu[oò]|vuoi"
    r"|vuole|preferisci|preferisce|(je|u) (wilt|wil|kunt|kan))\b"
    r"|(te|le|les|ti|vous|t') ?(parece( bien)?|viene bien|conviene|sirve|ayuda|convient|arrange"
    r"|va( bene)?|sta bene|aiuta)|(ça|cela|es|das|dat|het) (te |vous |t')?(convient|va|arrange"
    r"|aide|geht|hilft|passt|kan|helpt)|((es|fuera|c'est|est|ist|for|è|e) )?(necesario|m[aá]s"
    r" f[aá]cil|lo mejor|n[ée]cessaire|plus simple|mieux|n[öo]tig|einfacher|besser"
    r"|necess[áa]rio|mais f[áa]cil|melhor|necessario|pi[uù] facile|meglio|nodig|makkelijker"
    r"|beter)|hace falta|ayuda|serve|aiuta)"
    r"(?=[\W_]*($|[.!?,;:)]|(por favor|s'il vous pla[iî]t|bitte|per favore|alstublieft"
    r"|gracias|merci|danke|grazie|obrigad[oa]|dank je)\b))"
)
"""What a foreign "if" after a yes may defer to and stay consent (see :data:`_TERMS`)."""
_AS_YOU_WISH = (
    # "Yes, as you wish", "Sí, como quieras", "Oui, comme vous voulez", "Sim, como quiser",
    # "Sì, come vuoi", "Ja, zoals u wilt": the agent's choice, where a yes opens with "as"
    r"(you (wish|like|prefer|want|see fit|think best)|(u|je|jij) (wilt|wil)|quieras|quiera"
    r"|prefieras|prefiera|gustes|guste|vous (voulez|pr[ée]f[ée]rez|le souhaitez)|tu (veux"
    r"|pr[ée]f[eè]res)|bon vous semble|quiser|preferir|achar melhor|vuoi|vuole|preferisci"
    r"|preferisce|(sie|du) (wollen|willst|m[öo]chten|m[öo]chtest))"
    r"(?=[\W_]*($|[.!?,;:)]|(please|por favor|s'il vous pla[iî]t|bitte|per favore|alstublieft"
    r"|thanks|gracias|merci|danke|grazie|obrigad[oa]|dank je)\b))"
)
POLITE_DEFERRING = rf"({_DEFERRING_IF_ELSEWHERE}|{_AS_YOU_WISH})"
"""What a yes's foreign "if", or its "as" in any language the default reads, may defer to and
stay consent: "if possible", "if you like", "as you wish" ("Ja, als dat kan", "Sí, como
quieras"). The one list of these, which the ``confirmed`` reader also reads where a yes's
"als", "como", "comme" or "as" would open a term of the user's own."""
_FOR_LATER = (
    rf"(once|after|as soon as|when|whenever|until|till|if(?! {_DEFERRING_IF})|the moment)"
    r" ((my|our|his|her|their)"
    rf" \w+|{KIN}|(i|we)(?! (must|have to)\b)|he|she|they"
    r"|(the|this|that) (?!(case|policy|way|time|refund|return|exchange|cancellation|change"
    r"|money|credit|process)\b)[\w'-]+"
    r"|it (?!(is (ok|okay|fine|alright|possible|easier|allowed|necessary|needed)|helps|works"
    r"|suits|makes)\b)[\w'-]+)\b"
)
"""A time when something else has happened ("once my wife agrees", "after I check with my
bank", "as soon as the package arrives", "if it arrives damaged"): not the agent's readiness
("when you can", "if possible", "when ready", "if it's ok")."""
_GRANTING = rf"{_YES_WORDS}|{_OPENING_YES}|why not"
"""The words of a yes, for the terms read after or before one ("Why not, once my wife
agrees")."""
_COSTING = (
    r"\b(lose|losing|lost|loses|forfeit|forfeits|forfeiting|charge|charged|charges|fees?"
    r"|penalty|penalties|penali[sz]ed|surcharge|cost|costs|pay|paying|deduct|deducted|void|voids"
    r"|voided|affect|affects|affected|catch|downside|drawback|risk|still (have|keep|get|earn)"
    r"(?! (an? |the |my )?(email|e-mail|receipt|confirmation|text|update|notification)s?\b)"
    r"|still be (able|eligible|covered|valid)|what happens (to|with)|what about (my|the)"
    r" (points|rewards|warranty|discount|coupon|membership|subscription|gift|bonus|credit"
    r"|promo|promotion|free|loyalty|status))\b"
)
"""Words of what a change may cost the user, for a question asked with a yes."""
_COSTING_ELSEWHERE = (
    # Spanish, French, German, Portuguese, Italian, Dutch, Swedish, Danish and Norwegian: "Sí,
    # ¿hay algún cargo?", "Oui, y a-t-il des frais ?", "Ja, kostet das etwas?", "Sim, tem
    # alguma taxa?", "Sì, ma ci sono costi?", "Ja, maar zijn er kosten?", "Ja, finns det en
    # avgift?"; "¿perderé mis puntos?", "Verliere ich meine Punkte?"
    r"\b(cargos?|comisi[oó]n(?:es)?|tarifas?|cuesta|costar[aá]|coste|costos?|cobr(a|an|ar|ar[aá]n?"
    r"|en|ado|ada)|pagar|perder[eé]?|pierdo|pierda|penalizaci[oó]n|multas?|recargos?"
    r"|afectar[aá]|frais|co[uû]t(e|era|s)?|payer|paierai|factur[ée](e|es|s|r|ra)?|perdre|perdrai"
    r"|perds|p[ée]nalit[ée]s?|commission|suppl[ée]ment|pr[ée]lev[ée]e?"
    r"|geb[üu]hr(en)?|kostet|kosten|bezahlen|zahlen|zahle|verliere|verlieren|verliert|strafe"
    r"|berechnet|aufpreis|abgezogen|verf[äa]llt|verfallen"
    r"|taxas?|custos?|custa|custar[aá]|cobrad[oa]|cobran[çc]a|perco|penalidades?"
    r"|costi|costo|costa|coster[aà]|commission[ei]|tariff[ae]|addebit(o|ato|ata|ati|i)"
    r"|pagare|perder[oò]|perdo|penal[ei]|supplement[oi]"
    r"|kost|betalen|betaal|verlies|verliezen|boete|toeslag|rekenen|aangerekend"
    r"|avgift(er)?|gebyr(er)?|kostar|koster|betala|betale|f[öo]rlora|f[öo]rlorar|miste|mister)\b"
)
"""The same words in the other languages the default yes and ``no`` read."""
_REGARDLESS = (
    r"either way|regardless|anyway|anyhow|no matter what|in any case|de todos modos"
    r"|de todas (formas|maneras)|igualmente|quand m[êe]me|de toute fa[çc]on|peu importe|trotzdem"
    r"|sowieso|so oder so|de qualquer (forma|jeito|maneira)|mesmo assim|comunque|in ogni caso"
    r"|toch|hoe dan ook|[äa]nd[åa]|uansett|alligevel"
)
"""Words saying a question asked with a yes changes nothing ("Yes, is there a fee? I want it
either way")."""
_TERMS = (
    rf"\b(instead|(only if|as long as)(?! (that )?{_DEFERRING_IF})|unless|on (the )?condition"
    r"|otherwise|if not)\b"
    # the same condition in other words ("Yes, so long as it ships today", "Sure, assuming
    # it's the full price", "OK, subject to it arriving by Friday")
    rf"|\b(so long as(?! (that )?{_DEFERRING_IF})|except if|except when|only (when|once|after)"
    r"|subject to|contingent (on|upon)|(on|under|with) (the|one|a|this) condition|on the"
    rf" understanding|(providing|assuming)(?! (that )?{_DEFERRING_IF}) (that|it|you|they|the|my"
    r"|this|i))\b"
    # a yes put under a condition at once ("Yes if it's the full price", "Sure, if you refund
    # it to PayPal"), a person addressed beside it too ("Yes, Sam, if it's under $50", "Sam,
    # yes, if..."), not a polite one ("Yes, if you could", "OK if that's fine")
    rf"|^[\W_]*{_ADDRESSED}(yes|yeah|yep|sure|ok|okay)[\W_]*{_ADDRESSED}(but )?if"
    rf" (?!{_DEFERRING_IF})"
    r"(?!you (can|could|would|don't mind|'d"
    r"|want|like|need|please)\b|(at all )?possible\b|needed\b|necessary\b|so\b|that's (ok|okay|fine"
    r"|alright|all right|possible|the (policy|case))\b"
    r"|it's (ok|okay|fine|alright|all right|possible)\b)"
    rf"|\bprovided(?! (that )?{_DEFERRING_IF}) (that|it|you|they)\b"
    # ... or opening the clause after a yes or a comma, before any subject ("Yes, provided the
    # fee is waived", "OK provided there's no fee"; not "the details I provided the agent")
    rf"|(^|[,;:]|\b(yes+|yeah|yep|sure|ok|okay|fine|alright)\b)[\W_]{{0,3}}provided\b"
    rf"(?! (that )?{_DEFERRING_IF})"
    # ... in the other languages the default reads ("Sí, si mi esposa está de acuerdo", "Oui,
    # si c'est le plein tarif", "Ja, wenn meine Frau zustimmt", "Sì, se va sulla Visa", "Sim, se
    # for para o PayPal", "Ja, als het naar PayPal gaat"); not "Sí, si es posible"
    r"|^[\W_]*(s[iíì]|oui|ja|sim|d'accord|claro|certo|vale|va bene)[\W_]+((pero|mais|aber|mas|ma"
    r"|maar|solo|nur|seulement)[\W_]+)?(si|se|wenn|falls|als|s'(il|ils|elle)(?! (vous|te)"
    rf" pla[iî]t))\b(?! {_DEFERRING_IF_ELSEWHERE})"
    r"|\bprefer (the|my|a|an|to|it to|if)\b"
    r"|\brather (than|you|have|get|use|keep|the|my|a|an|it|go|do)\b"
    r"|\bbut (please )?(not|first|use|(to|onto|into|on) (?!be\b)[^\W\d_]"
    r"|(put|send|move|switch|make|change) (it|them|that|the (refund|money))\b"
    r"(?! (quick|quickly|fast|soon|easy|happen)\b))"
    r"|\b(let me|(i|we)('ll|'d| will| would| must| should)( (need|have|want|like|got) to)?"
    r"|(i|we) (need|have|want|got) to) (think|check with|ask my|consult|(talk|speak) (to|with) my)"
    r"\b|\b(i|we) (check with|ask my|consult|(talk|speak) (to|with) my)\b"
    r"|\bnot (that|this|those|these)( ones?)?\b"
    r"|\b(before|if|until|when|once) (i|we) (say|agree|confirm|decide)\b"
    # a go-ahead for when something else has happened ("Proceed once my wife agrees", "Yes,
    # as soon as the package arrives", "Once my bank confirms, go ahead"): no consent now;
    # not when the agent is ready ("Go ahead when you can", "Yes, if possible")
    # (the run of yeses is possessive, ``++``: "please" of both runs made a reply of 95,000
    # characters of "please, please, ..." split between them every way, quadratic)
    rf"|^[\W_]*(({_GRANTING})\b[\W_]*)++((but|only|then|just|please)\b[\W_]*)*"
    rf"{_FOR_LATER}"
    rf"|\b(go ahead|proceed|do it|refund it|cancel it|process it|you can|you may)\b,? "
    rf"((but|only|then|just|please)\b[\W_]*)*{_FOR_LATER}"
    rf"|^[\W_]*((but|only|then|just)\b[\W_]*)*{_FOR_LATER}[^.!?;]*?[,;]? "
    rf"((then|so)\b[\W_]*)?({_GRANTING})\b"
    r"|\b(as soon as|once|when|after) (i|we) (get|am|'m|are|'re|have|check|talk|speak|send"
    r"|return|ship|receive|see|hear|know|find|drop)\b"
    # a go-ahead asking for something before the change ("Go ahead and tell me the total
    # first", "Yes, check the size first, then do it", "Sure, before you do, what's the
    # total?", "OK, after you tell me the total", "First tell me the total"): the decision waits
    # for the answer ("Yes, the first one", "I ordered it first", "before you go, thanks" are
    # consent)
    rf"|\b{_ASKING_FOR}\b[^.!?;]{{0,80}}\bfirst\b(?=\W*($|[.!?,;)]|(and )?then\b|please\b))"
    rf"|(^|[.!?,;:]|\band)\W{{0,40}}+first\b\W*(please\W+)?{_ASKING_FOR}\b"
    r"|\bbefore (you|u|we) (do|go ahead|proceed|process|refund|cancel|exchange|return|submit"
    r"|start|change|make|issue|place|finali[sz]e|complete|continue|act|book|swap|update|move"
    r"|credit)\b|\bbefore (doing|proceeding|going ahead)\b"
    r"|^[\W_]*(\w+\W+){0,3}before (that|anything( else)?)\b"
    r"|\b(after|once|as soon as) you('ve| have)? (tell|told|show|shown|let|give|gave|given"
    r"|quote|quoted) me\b|\b(after|once|as soon as) you('ve| have)? (explain|explained"
    r"|double[- ]check|double[- ]checked|check|checked|verify|verified) (the (price|total|cost"
    r"|amount|fee|difference)|how much|what|whether|if)\b"
    # a yes put off ("Yes, but tomorrow please", "Sí, pero mañana") or hedged ("Probably
    # yes", "I think so")
    r"|\bbut (please )?(tomorrow|later|next (week|month)|another (day|time))\b"
    # ... with no "but": a time after the yes or the go-ahead, ending its clause ("Yes,
    # tomorrow.", "Sure, later please", "Go ahead next week", "OK, on Monday", "Yes, so do it
    # tomorrow"); not "Yes, now"
    rf"|^[\W_]*(({_GRANTING})\b[\W_]*)++((please|then|maybe|but|so|and|just)\b[\W_]*)*"
    rf"((do|process|send|make|submit) it\b[\W_]*)?{_LATER}"
    r"(\W+(please|then|thanks|thank you|though|ok|okay|maybe))*\W*($|[.!?;,)])"
    # a question about what the change would cost the user, in the reply ("Yes, but will I lose
    # my points?", "Sure, is there a fee?", "OK. Will I be charged?", "Yes, but what happens to
    # my warranty?"): the decision waits for the answer; a question about when or how it is
    # done ("Yes, but how long will it take?", "Yes. Will I get an email?") does not
    rf"|^(?!.*\b({_REGARDLESS})\b).*?({_COSTING}|{_COSTING_ELSEWHERE})[^.!?]{{0,200}}\?"
    r"|\b(probably|perhaps|maybe|possibly) (yes|yeah|so|ok|okay|sure)\b"
    r"|^[\W_]*i think (yes|yeah|so|ok|okay|sure)\b"
    r"|\b(\w+n't|not|cannot|never) (say|said|saying|give|gave|giving) (a |my )?(yes|ok|okay"
    r"|sure|go-ahead)\b"
    # the same in the languages whose yes the default knows (Spanish, French, German,
    # Portuguese): "Sí, pero solo si...", "Oui, mais seulement si...", "Ja, aber nur wenn..."
    r"|\b(s[oó]lo si|siempre (que|y cuando)|con tal (de )?que|a condici[oó]n|en (vez|lugar) de"
    r"|pero (no|primero|mañana|más tarde|luego)|seulement si|sauf si|[àa] condition"
    r"|pourvu qu(e|')|au lieu d(e|')|mais (demain|plus tard)|aber (morgen|sp[äa]ter)"
    r"|mas (amanh[ãa]|mais tarde|depois)"
    r"|plut[oô]t|mais (pas|d'abord)|nur (wenn|falls)|sofern|vorausgesetzt|unter der bedingung"
    r"|stattdessen|lieber|aber (nicht|erst)|s[oó] se|somente se|desde que|contanto que"
    r"|em vez d[eoa]|ao inv[eé]s d[eoa]|mas (n[aã]o|primeiro))\b"
    rf"|{_DEFERRED_ELSEWHERE}"
    # ... and in languages whose yes the default reads only as a shared word ("ok", "si",
    # "ja"): Italian ("Si, ma prima dimmi il totale", "OK, solo se va sulla Visa"), Dutch ("Ja,
    # maar eerst wil ik het totaal weten", "Ja, liever naar PayPal") and Swedish, Danish and
    # Norwegian ("Ja, men först vill jag veta totalen", "Ja, kun hvis det er Visa")
    r"|\b(solo se|soltanto se|solamente se|a condizione che|purch[ée]|sempre che|invece"
    r"|piuttosto|al posto d|ma (non|prima|domani|pi[uù] tardi|dopo)|prima (dimmi|mi dica|mi dici"
    r"|voglio sapere|vorrei sapere|fammi sapere|controlla|verifica|conferma|quanto|qual)"
    r"|prima di (farlo|procedere|rimborsare|annullare|cambiare|continuare)|fammi pensare"
    r"|ci (devo )?pens(o|are|arci)|devo pensarci|aspett[ai]"
    r"|alleen als|op voorwaarde|mits|in plaats van|liever|maar (niet|eerst|morgen|later)"
    r"|eerst (wil|moet|zeg|vertel|laat|wat)|(zeg|vertel) (me|mij) eerst|voordat (je|u|jij)"
    r"|laat me (even )?(na)?denken|(er )?(even )?over nadenken|wacht|nee(?!-)"
    r"|bara om|endast om|kun hvis|bare hvis|ist[äa]llet|i stedet|hellre|men (f[öo]rst|f[øo]rst"
    r"|inte|ikke|imorgon|i morgen|senare|senere)|f[öo]rst (vill|m[åa]ste|s[äa]g)"
    r"|l[åa]t mig t[äa]nka|lad mig t[æa]nke|la meg tenke)\b"
    r"|\bactually\b[^.!?]{0,200}\b(make it|switch|change (it|that)|keep (it|them|those|these))\b"
    # a yes said as a supposition ("I might say yes", "Hypothetically, yes", "Sounds good in
    # theory", "Would it be OK if I said yes later?") or asking what else there is ("OK, what
    # are my other options?", "Sure, what else can you do?"): no decision yet
    r"|\b(i|we) (might|may) (say yes|agree|accept|go (ahead|for it)|be (ok|okay|fine) with"
    r"|want (that|it|this|them|to))\b"
    r"|\b(i|we)('d| would| could) say (yes|ok|okay|sure)\b|\b(if|when) (i|we) (said|say|were"
    r" to say|agreed|agree) (yes|ok|okay|sure|to (it|that|this))\b"
    r"|\b(hypothetical(ly)?|in theory|theoretically|in principle)\b"
    r"|\b(suppose|supposing|assuming|say) (that )?(i|we) (say|said|agree|agreed) (yes|ok|okay"
    r"|sure|to (it|that|this))\b|\b(supposing|assuming) (yes|so)\b"
    r"|\b(what|which|any)( are| were| is)?( my| the| your| our)?( other)? (options|alternatives"
    r"|choices)\b|\bwhat (else|other) (can|could|would) (you|i|we)\b"
)
"""A yes on terms of the user's own is no yes to the change as asked: another choice ("Yes, but
to my PayPal instead", "I'd prefer the gift card", "Yes, but to PayPal", "Yes, but put it on
my gift card"), a condition ("only if", "as long as it's the shoes", "Can it go to PayPal?
Otherwise yes", "Yes if it's the full price") or a decision put off ("let me check with my wife
first", "Before I say yes, is it the full price?"), in the other languages too ("Sí, pero solo
si es a mi Visa"); or another choice on second thoughts ("Actually, make it the gift card")."""
TERMS_PATTERN = _TERMS
"""The part of the default ``confirmed.no`` that reads a yes on terms of the user's own (another
choice, a condition, a decision put off), as against a plain no: what a message sent after a
yes may add to it ("Yes." "Only if it goes to PayPal."), where an unprompted "no" ("Oh, and no
receipt needed") is a remark."""
JOKING_PATTERN = (
    r"(?<!not )(?<!n't )\b(just )?(kidding|joking|jk|j/k)\b|(^|\s)/s\b|\blol,? no\b"
    r"|[\U0001f644\U0001f612]"
)
"""A reply marked as not meant: "just kidding", "jk", the "/s" of sarcasm, an eye roll
("🙄"); "I'm not kidding, go ahead" is meant."""
_JOKING = JOKING_PATTERN
_SOMEONE_ELSES = (
    rf"^[\W_]*((well|so|ok|okay|um|hmm),? )?((my|our) {KIN}|(he|she|they))(( would| will|'d)"
    r" (say|agree|approve|want|be fine with|be ok with|be okay with)| (says|said|thinks|thought"
    r"|agrees|agreed|wants|wanted|told me|is fine with|is ok with|is okay with|approves"
    r"|approved))\b"
    # ... unless the user says yes too ("My wife agrees, so yes, go ahead", "She says yes. Go
    # ahead.")
    rf"(?!.*(\b(so|and)\W+(i|yes|yeah|ok|okay|sure|please|go ahead)\b|[.!?;] [\W_]*({_YES_WORDS}"
    rf"|{_OPENING_YES})\b))"
)
_REPORTED = (
    # ... or reported after it ("According to my wife, yes", "Yes, says my wife", '"Go ahead"
    # is what my husband said'); not "as my wife said, they don't fit" nor "my wife's note"
    rf"(\b(according to|per|says|said|in the words of) (my|our) {KIN}\b(?!')"
    rf"|\b(is|was|that's|that is) what (my|our) {KIN} (said|says|wants|wanted|told me|thinks"
    r"|would say|would want)\b)"
    r"(?!.*(\b(so|and)\W+(i|yes|yeah|ok|okay|sure|please|go ahead)\b|\b(i|me) (too|as well)\b"
    r"|\bi (agree|do|say yes|confirm)\b))"
)
"""A yes that is another person's, reported ("My husband says yes", "My wife said to go
ahead", "My husband would say yes", "According to my wife, yes"): no consent of the
user's."""
DISOWNED_PATTERN = (
    rf"\b(that|this|it) (wasn't|was not) me\b|\b(that|this|it) was my {KIN}\b(?!')"
    rf"|\bmy {KIN} (typed|wrote|sent|said) (that|this|it)\b"
)
"""A reply disowned: someone else typed it ("That was my son typing.", "That wasn't me", "My
kid sent that"); "that was my son's order" is not."""
_HEDGED = r"(,? (i guess|i suppose|i think so|i think|maybe|perhaps|probably|then|i mean))*"
"""Hedges after a yes that leave it asked back when a question mark ends them ("Yes, I
guess?", "OK, maybe?")."""
NO_PATTERN = (
    rf"\b({_NOT_CLOSING}no{_IDIOMS}|{_NOT_CLOSING}(nope|nah)"
    r"|not (yet|now|ok|okay|right|correct|agreed)|not sure(?! (why|how))|"
    rf"never(?! {_REASON})|(do not|don't|dont)(?! (worry|mind)\b)(?! {_REASON})"
    rf"(?! (need|want) (a|any|the|an) {_EXTRAS}\b)|"
    r"hold (on(?! to\b)|off|up|it(?=\W*$)|that thought)|hang on|"
    r"stop|never ?mind|scratch that|undo (it|that|this)|abort|belay that|call (it|that|this) off|"
    r"halt|abbrechen|"
    r"forget (it|that|about it|(about )?(the|my|your|those|these) \w+)|changed? (my|our) minds?|"
    r"(on )?second thoughts?|"
    r"(absolutely|definitely|certainly|of course) not|yeah,? right(?=\W*($|like|as if))|as if|"
    r"non(?!-)|nein|n[aã]o(?! (tem|h[aá]) problema)|nie|nej|nei|"
    # stop in the other languages of the default yes ("¡Espera!", "Attendez", "Warte")
    r"espera|espere|esperá|detente|attends|attendez|arr[êe]te[sz]?|warte|stopp|pare)\b"
    r"|いいえ|\U0001f44e"
    rf"|(?<!can't )\bwait\b|^[^.!?]*\b({_YES_WORDS}|{_OPENING_YES}){_HEDGED}\s*\?"
    # a yes left in doubt at its end ("Yes, probably", "Yes. Maybe.", "Sure... perhaps") or
    # asking for a moment as a clause of its own ("Yes, give me a sec", "Yes. One moment.";
    # not "Yes, it only takes a second")
    r"|\b(maybe|perhaps|probably|possibly)[\W_]*$"
    # (the run of marks after the clause's opening is bounded, as below: linear in a reply of
    # "; ; ; ..." that each of its openings would scan to its end)
    r"|(^|[.!?,;] )[\W_]{0,40}+((just|give me|wait|hang on|hold on)\W+)?(one|a|just a) (sec|second"
    r"|moment|minute|min|mo)s?\b(?=( please)?[\W_]*($|[.!?,;]))"
    r"|(?<!why )\bnot\W*$"
    # a yes asked about ("Can I say yes later?"); a yes said in mockery ("Sure, when pigs fly")
    r"|^[\W_]*((can|could|should|shall|may|must|do|would) (i|we)|what if (i|we)|is it ok(ay)?"
    r" if (i|we)) (just )?(say|answer|reply|tell you) (yes|ok|okay|sure)\b"
    r"|\bnot (a|my) (yes|ok|okay)\b|\b(yes|ok|okay) is not\b|\bnot quite (yet|now)\b"
    r"|\bpending (the |my |your |a |an )?([\w'-]+ )?(approval|confirmation|review|check|ok|okay"
    r"|go-ahead|sign-off)\b"
    # the thing kept, so no change of it ("Fine, I'll keep it.", "Sure, I'd rather keep them")
    r"|\b(i|we)('ll| will|'d rather| would rather|'d prefer to| want to|'d like to)( just)?"
    r" keep (it|them|those|these|this|that|both)\b"
    r"|\bwhen pigs fly\b|\bin your dreams\b|\bover my dead body\b|\bnot in a million years\b"
    r"|\b(i'd|i would) (hate|loathe) (that|it|this)\b"
    rf"|{_JOKING}|{DISOWNED_PATTERN}|{_SOMEONE_ELSES}|{_REPORTED}|{_TERMS}"
)
"""The default ``confirmed.no``: a reply matching it confirms nothing, even with a yes. A yes
asked back in the reply's first sentence ("yes?", "OK?", "Go ahead? I don't follow") is a
question, not consent; a later question is another matter ("Yes please. Will the shoes be
ok?"). "No problem", "no rush", "don't worry" and "don't mind" are not a no; taking a yes back
("hold off", "never mind", "forget it", "I changed my mind", "on second thought", "undo that",
"abort", "call it off") is."""
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def variable(value: Any) -> str | None:
    """The variable a condition value refers to (``"$name"``), or None for a literal."""
    if isinstance(value, str) and value.startswith("$") and not value.startswith("$$"):
        return value[1:]
    return None


def literal(value: JsonScalar) -> JsonScalar:
    """A literal condition value: ``"$$x"`` stands for the string ``"$x"``."""
    return value[1:] if isinstance(value, str) and value.startswith("$$") else value


def _check_path(path: str, roots: tuple[str, ...], what: str) -> None:
    segments = path.split(".")
    if not all(segment.strip() for segment in segments):
        raise ValueError(f"{what} path {path!r} has an empty segment")
    if segments[0] not in roots:
        raise ValueError(f"{what} path {path!r} must start with one of: {', '.join(roots)}")
    # An error's path reads the JSON text it holds (see grading.constraints._embedded).
    if len(segments) > 1 and segments[0] not in ("args", "output", "error"):
        raise ValueError(f"{what} path {path!r}: {segments[0]} is one value, with nothing in it")


_FIELD_VALUES: dict[str, tuple[JsonScalar, ...]] = {
    "ok": (True, False),
    "role": ("agent", "user"),
    "error_class": (*get_args(ErrorClass), None),
}
"""The values a step's field can hold, where it holds only a few."""
_TEXT_FIELDS = ("tool", "error", "text")
"""A step's fields holding text (``error`` and ``text`` may be null)."""


def _check_value(path: str, expected: JsonScalar) -> None:
    """A condition on a step's own field (``ok``, ``role``, ``error_class``, ``tool``,
    ``error``, ``text``) that no step can meet would make a ``never`` hold, and a ``before``
    fail, on every attempt: ``ok: "true"``, ``error_class: permision_denied``, ``role:
    assistant``, ``tool: 5``."""
    if variable(expected) is not None:
        return
    value = literal(expected)
    held = _FIELD_VALUES.get(path)
    if held is not None and not any(type(value) is type(v) and value == v for v in held):
        shown = ", ".join("null" if v is None else str(v).lower() for v in held)
        raise ValueError(f"where {path}: {value!r} is none of its values ({shown})")
    if path in _TEXT_FIELDS and not (isinstance(value, str) or (value is None and path != "tool")):
        raise ValueError(f"where {path}: {value!r} is not text")


class WriteMatch(Strict):
    """Selects tool calls by the rows they wrote (the call's recorded write history)."""

    table: str
    key: JsonScalar | list[JsonScalar] = None
    """Primary key of the row (a list for a composite key), compared exactly; unset: any row."""
    columns: list[str] = Field(default_factory=list)
    """Columns of which at least one changed; empty: any write. An inserted or deleted row
    changes all its columns."""


class Match(Strict):
    """Selects trace steps: tool calls (by name, arguments, outcome, writes) or messages.

    Text conditions (``contains``, ``matches``) apply to normalised text (see
    ``groundstate.grading.constraints.normalise``).
    """

    tool: str | None = None
    """Tool name; ``"*"`` matches every tool call (as does leaving it unset with ``writes``)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments the call must have, each holding the value given (an object given: the
    members given, others may stand beside them at any depth; a list: the same elements)."""
    ok: StrictBool | None = None
    """``True``: only calls that succeeded; ``False``: only calls that failed; unset: both."""
    writes: WriteMatch | None = None
    """Only calls whose recorded row-level writes include such a write."""
    message: Literal["agent", "user"] | None = None
    """Match messages from this role instead of tool calls."""
    contains: str | None = None
    """With ``message``: the normalised text contains the normalised value."""
    matches: str | None = None
    """With ``message``: a regular expression searched (case-insensitively) in the normalised
    text. The pattern itself is not normalised: write digits without separators."""
    final: StrictBool | None = None
    """With ``message: agent``: ``True`` selects only the agent's final reply, ``False`` only
    the other messages; unset: both."""
    where: dict[str, JsonScalar] = Field(default_factory=dict)
    """Conditions ``path: value`` on the step; every one must hold, each by some value its path
    reaches (through ``*``, one element will do, and conditions through the same ``*`` one
    element together; see the paths reference)."""
    capture: dict[str, str] = Field(default_factory=dict)
    """``name: path``: values to bind from the step (only in ``before.first``)."""

    @field_validator("matches")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return _valid_pattern(pattern)

    @field_validator("contains")
    @classmethod
    def _says_something(cls, text: str | None) -> str | None:
        # Imported here: the grading package imports this module.
        from groundstate.grading.constraints._text import normalise

        if text is not None and not normalise(text):
            raise ValueError(
                f"{text!r} is empty once normalised, so every message contains it "
                "(a 'never' would fail every attempt)"
            )
        return text

    @field_validator("where")
    @classmethod
    def _no_variables(cls, where: dict[str, JsonScalar]) -> dict[str, JsonScalar]:
        for path, value in where.items():
            if variable(value) is not None:
                raise ValueError(
                    f"{path}: {value!r} refers to a variable, and variables are only read in "
                    "before.where (write '$$...' for a literal string starting with '$')"
                )
        return where

    @field_validator("capture")
    @classmethod
    def _names(cls, capture: dict[str, str]) -> dict[str, str]:
        bad = [name for name in capture if not _VARIABLE.match(name)]
        if bad:
            raise ValueError(f"capture names must be identifiers, got {', '.join(bad)}")
        return capture

    @property
    def is_message(self) -> bool:
        return self.message is not None

    @model_validator(mode="after")
    def _one_kind(self) -> Match:
        is_call = self.tool is not None or self.writes is not None
        if is_call == self.is_message:
            raise ValueError("a match needs exactly one of: tool (or writes), message")
        wrong = _set_fields(self, ("contains", "matches", "final") if is_call else ("args", "ok"))
        if wrong:
            kind, other = ("tool", "message") if is_call else ("message", "tool")
            raise ValueError(f"{', '.join(wrong)}: for {other} matches only, not {kind} matches")
        if self.final is not None and self.message != "agent":
            raise ValueError("'final' applies to agent messages only")
        roots = MESSAGE_ROOTS if self.is_message else TOOL_ROOTS
        for path in [*self.where, *self.capture.values()]:
            _check_path(path, roots, "a message" if self.is_message else "a tool call")
        for path, value in self.where.items():
            _check_value(path, value)
        return self


def _valid_pattern(pattern: str | None) -> str | None:
    """*pattern*, once it compiles as the grader compiles it; else a clear error."""
    if pattern is not None:
        if not pattern:
            raise ValueError(f"{pattern!r}: an empty pattern is found in every text")
        try:
            re.compile(pattern, re.IGNORECASE)
        except (re.error, OverflowError, RecursionError) as exc:  # e.g. a{99999999999}
            reason = str(exc) if isinstance(exc, re.error) else "too large or too deeply nested"
            raise ValueError(f"invalid regular expression {pattern!r}: {reason}") from None
    return pattern


def _set_fields(model: BaseModel, names: tuple[str, ...]) -> list[str]:
    return [f"'{name}'" for name in names if getattr(model, name) not in (None, {})]


def _check_no_capture(*matches: tuple[str, Match]) -> None:
    for where, match in matches:
        if match.capture:
            raise ValueError(f"{where}: 'capture' binds variables only in before.first")


class _Constraint(Strict):
    id: Id
    description: str = ""


class BeforeRule(Strict):
    first: Match
    then: Match
    where: dict[str, JsonScalar] = Field(default_factory=dict)
    """Conditions on the ``then`` step that one earlier ``first`` step must make true;
    ``"$name"`` is the value that step captured as ``name``."""

    @model_validator(mode="after")
    def _bindings(self) -> BeforeRule:
        _check_no_capture(("then", self.then))
        roots = MESSAGE_ROOTS if self.then.is_message else TOOL_ROOTS
        for path, value in self.where.items():
            _check_path(path, roots, "a 'then'")
            _check_value(path, value)
            name = variable(value)
            if name is not None and name not in self.first.capture:
                raise ValueError(f"where {path}: ${name} is not captured by 'first'")
        return self


class BeforeConstraint(_Constraint):
    """Every step matching ``then`` is preceded by a step matching ``first`` (bound by
    ``where`` to its captures, if given)."""

    before: BeforeRule


class NeverConstraint(_Constraint):
    """No step matches."""

    never: Match

    @model_validator(mode="after")
    def _plain(self) -> NeverConstraint:
        _check_no_capture(("never", self.never))
        return self


class AtMostRule(Strict):
    n: Annotated[Count, Field(ge=0, le=MAX_STEPS)]
    match: Match

    @model_validator(mode="after")
    def _plain(self) -> AtMostRule:
        _check_no_capture(("match", self.match))
        return self


class AtMostConstraint(_Constraint):
    """At most ``n`` steps match."""

    at_most: AtMostRule


class AtLeastRule(Strict):
    n: Annotated[Count, Field(ge=1, le=MAX_STEPS)]
    match: Match

    @model_validator(mode="after")
    def _plain(self) -> AtLeastRule:
        _check_no_capture(("match", self.match))
        return self


class AtLeastConstraint(_Constraint):
    """At least ``n`` steps match (e.g. the final reply mentions the refund)."""

    at_least: AtLeastRule


class ConfirmedRule(Strict):
    change: Match
    """The changes that need a confirmation (a tool match)."""
    names: list[str] = Field(default_factory=list)
    """Paths into the change (``args.order_id``) whose values the confirmed question names."""
    yes: Match = own_default(Match(message="user", matches=YES_PATTERN))
    """What counts as the user's yes (a user-message match)."""
    no: Match | None = own_default(Match(message="user", matches=NO_PATTERN))
    """A reply that also matches this confirms nothing; ``null``: no such check."""
    asks: str | None = None
    """A regular expression the question must also contain (searched case-insensitively in
    its normalised text, like ``matches``): what kind of change it asks about (``\\brefund``),
    so that a yes to an exchange naming the same item and amount does not authorise a refund.
    Unset: any question naming the values."""

    @field_validator("asks")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return _valid_pattern(pattern)

    @model_validator(mode="after")
    def _kinds(self) -> ConfirmedRule:
        if self.change.is_message:
            raise ValueError("change: must be a tool match")
        for field_name, reply in (("yes", self.yes), ("no", self.no)):
            if reply is not None and reply.message != "user":
                raise ValueError(f"{field_name}: must be a match on 'message: user'")
        _check_no_capture(("change", self.change), ("yes", self.yes))
        for path in self.names:
            _check_path(path, TOOL_ROOTS, "a 'names'")
        return self


class ConfirmedConstraint(_Constraint):
    """Every change answers a user's yes to an agent question that named its values."""

    confirmed: ConfirmedRule


class ProvenanceRule(Strict):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_name=True, serialize_by_alias=True
    )

    match: Match
    """The calls to check (a tool match)."""
    args: list[str] = Field(min_length=1)
    """Argument names whose values must come from the user; a dotted path (``address.zip``,
    ``items.*.id``) reaches into an argument."""
    source: Literal["user"] = Field(default="user", alias="from")
    """Where the values must have appeared first: ``user`` (a user message)."""
    may_be_empty: list[str] = Field(default_factory=list)
    """Of ``args``, those that may be an empty string (or one of no letter or digit, such as
    ``"  "``) that nobody said; any other such value fails, as it was never said."""

    @model_validator(mode="after")
    def _tool(self) -> ProvenanceRule:
        if self.match.is_message:
            raise ValueError("match: must be a tool match")
        _check_no_capture(("match", self.match))
        for name in self.args:
            _check_path(f"args.{name}", TOOL_ROOTS, "an 'args'")
        unknown = [name for name in self.may_be_empty if name not in self.args]
        if unknown:
            raise ValueError(f"may_be_empty: {', '.join(unknown)} not among args")
        return self


class ProvenanceConstraint(_Constraint):
    """Listed argument values of matching calls appeared in an earlier user message."""

    provenance: ProvenanceRule


class NoUndoRule(Strict):
    tables: list[str] = Field(default_factory=list)
    """Tables to watch; empty: all."""


class NoUndoConstraint(_Constraint):
    """No call restores a value (or a row's presence) that an earlier call changed."""

    no_undo: NoUndoRule

    @field_validator("no_undo", mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        return {} if value is None else value  # ``no_undo:`` alone watches every table


class PythonConstraint(_Constraint):
    """A Python function ``fn(trace, s0) -> bool | (bool, evidence)`` from the suite."""

    check: SuiteRef
    """``file.py:function``, relative to the suite folder."""


CONSTRAINT_KINDS = (
    "before",
    "never",
    "at_most",
    "at_least",
    "confirmed",
    "provenance",
    "no_undo",
    "check",
)


HardConstraint = Annotated[
    Annotated[BeforeConstraint, Tag("before")]
    | Annotated[NeverConstraint, Tag("never")]
    | Annotated[AtMostConstraint, Tag("at_most")]
    | Annotated[AtLeastConstraint, Tag("at_least")]
    | Annotated[ConfirmedConstraint, Tag("confirmed")]
    | Annotated[ProvenanceConstraint, Tag("provenance")]
    | Annotated[NoUndoConstraint, Tag("no_undo")]
    | Annotated[PythonConstraint, Tag("check")],
    Discriminator(
        one_key_of(CONSTRAINT_KINDS),
        custom_error_type="constraint_kind",
        custom_error_message="a constraint needs exactly one of: " + ", ".join(CONSTRAINT_KINDS),
    ),
]


def named_tools(model: BaseModel, field: str = "") -> list[tuple[str, str]]:
    """``(field path, tool name)`` of every match in *model* that names a tool (not ``*``).

    A constraint naming a tool the task cannot call would hold vacuously; the loader refuses it.
    """
    found: list[tuple[str, str]] = []
    if isinstance(model, Match) and model.tool not in (None, "*"):
        found.append((f"{field}.tool", str(model.tool)))
    condition = getattr(model, "where", {}).get("tool")  # ``where: {tool: cancel_order}``
    if isinstance(condition, str) and variable(condition) is None:
        found.append((f"{field}.where.tool", str(literal(condition))))
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.extend(named_tools(value, f"{field}.{name}"))
    return found


def named_args(model: BaseModel, field: str = "") -> list[tuple[str, str, str]]:
    """``(field path, tool name, argument)`` of every argument *model* reads from the calls of
    a named tool: a match's ``args`` and its ``where``/``capture`` paths into ``args``, and a
    rule's ``where`` (into ``then``), ``names`` (into ``change``) and provenance ``args``. A
    misspelt argument would make the constraint hold (or fail) vacuously on every attempt; the
    loader refuses one the tool does not declare. *argument* is the path below ``args``.
    """
    found: list[tuple[str, str, str]] = []
    if isinstance(model, Match) and model.tool not in (None, "*"):
        tool = str(model.tool)
        found += [(f"{field}.args.{name}", tool, name) for name in model.args]
        for key, paths in (("where", list(model.where)), ("capture", model.capture.values())):
            found += _arg_paths(f"{field}.{key}", tool, paths)
    rules: list[tuple[str, Match, list[str]]] = []
    if isinstance(model, BeforeRule):
        rules.append(("where", model.then, list(model.where)))
    if isinstance(model, ConfirmedRule):
        rules.append(("names", model.change, model.names))
    if isinstance(model, ProvenanceRule):
        rules.append(("args", model.match, [f"args.{name}" for name in model.args]))
    for key, target, paths in rules:
        if target.tool not in (None, "*"):
            found += _arg_paths(f"{field}.{key}", str(target.tool), paths)
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.extend(named_args(value, f"{field}.{name}"))
    return found


def _arg_paths(field: str, tool: str, paths: Any) -> list[tuple[str, str, str]]:
    return [
        (f"{field}.{path.removeprefix('args.')}", tool, path.removeprefix("args."))
        for path in paths
        if path.startswith("args.")
    ]


TableNamed = tuple[str, str, JsonScalar | list[JsonScalar], list[str]]
"""Field path, table, key (None: any row) and columns a constraint names."""


def named_tables(model: BaseModel, field: str = "") -> list[TableNamed]:
    """Every ``writes`` match and ``no_undo`` table in *model*: checked against the fixture,
    where a misspelt name (or a key of the wrong type) would hold vacuously."""
    found: list[TableNamed] = []
    if isinstance(model, WriteMatch):
        found.append((field, model.table, model.key, list(model.columns)))
    if isinstance(model, NoUndoRule):
        found += [(f"{field}.tables[{i}]", t, None, []) for i, t in enumerate(model.tables)]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.extend(named_tables(value, f"{field}.{name}"))
    return found


def tool_matches(model: BaseModel, field: str = "") -> list[tuple[str, Match]]:
    """``(field path, match)`` of every match in *model* that names a tool (not ``*``)."""
    found: list[tuple[str, Match]] = []
    if isinstance(model, Match) and model.tool not in (None, "*"):
        found.append((field, model))
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.extend(tool_matches(value, f"{field}.{name}"))
    return found
