"""A procedural English->German parallel corpus, the same for the same seed everywhere.

Why: a toy corpus on which attention visibly matters. Sentences run from 3 to 40 words, and the
German departs from the English where a fixed-size summary of the source does badly: agreement
(der/den/dem/des, adjective endings), "not a" -> "kein", verb-final subordinate and relative
clauses, separable particles and infinitives sent to the clause end, inversion after a fronted
clause. The English decides the German (one German lemma per English word or fixed phrase, one
word order per structure; "and" only joins main clauses, relative clauses hold no adverbs, a noun
takes a modifier or a relative clause, not both), so a model can learn it almost perfectly.
Only ``Random.random()`` is drawn from (Python promises its stream, not that of ``choice``), and
no ``hash()`` of strings or set order is used: nothing depends on machine, version or PYTHONHASHSEED.
"""

from __future__ import annotations

import pathlib
import re
import zlib
from random import Random
from typing import NamedTuple, Optional

# g: 0 masculine, 1 feminine, 2 neuter (3 stands for any plural in the tables below)
_Noun = NamedTuple("_Noun", [("en", str), ("en_pl", str), ("de", str), ("de_pl", str), ("de_gen", str),
                             ("de_dat_pl", str), ("g", int)])
_Word = NamedTuple("_Word", [("en", str), ("de", str), ("n", int)])  # n: English word count
# en / en3 / en_pl: look at / looks at / look at; de_inf joins the particle (anrufen), de3, de_pl leave it off
# (ruft, rufen). frame: i, m (motion), a (accusative), d (dative), ad (both), s (says that ...), c (is + adjective)
_Verb = NamedTuple("_Verb", [("en", str), ("en3", str), ("en_pl", str), ("de_inf", str), ("de3", str),
                             ("de_pl", str), ("part", str), ("frame", str), ("n", int)])
# (singular, plural) forms; neg None where German would not mean the same ("muss nicht").
_Modal = NamedTuple("_Modal", [("en", tuple), ("neg", Optional[tuple]), ("de", tuple), ("n", int), ("n_neg", int)])
_Det = NamedTuple("_Det", [("key", str), ("en_sg", str), ("en_pl", str), ("kind", str), ("stem", str)])
# case: 1 accusative, 2 dative, 3 genitive ("of"); de_city: German word before a city, "" if none
_Prep = NamedTuple("_Prep", [("en", str), ("de", str), ("case", int), ("de_city", str), ("n", int)])


def _en_s(word: str, verb: bool = False) -> str:
    """English plural or third person singular by spelling (dogs, boxes, flies, goes)."""
    if word.endswith(("s", "x", "z", "ch", "sh")) or (verb and word.endswith("o")):
        return word + "es"
    return word[:-1] + "ies" if word[-1] == "y" and word[-2] not in "aeiou" else word + "s"


def _genitive(noun: str, g: int) -> str:
    """Genitive singular: feminine unchanged, else Hauses, Autos, Lehrers (two syllables), Hundes."""
    if g == 1:
        return noun
    if noun.endswith(("s", "ß", "x", "z", "sch")):
        return noun + "es"
    low = noun.lower()
    syllables = sum(b in "aeiouäöü" and a not in "aeiouäöü" for a, b in zip(" " + low, low))
    return noun + ("s" if noun[-1] in "aeiouy" or syllables > 1 else "es")


def _nouns(src: str) -> tuple[_Noun, ...]:
    """Parse "dog:Hund:e:m" items: English[|plural], German, plural suffix ("¨" umlauts the stem, a
    capitalized suffix is the whole plural), gender; the genitive and dative plural follow by rule."""
    out = []
    for item in src.split():
        en, de, pl, g = item.split(":")
        en, _, en_pl = en.partition("|")
        if pl.startswith("¨"):
            i = max(de.rfind(v) for v in "aouAOU")
            i -= i > 0 and de[i - 1: i + 1] == "au"  # Haus -> Häuser
            pl = de[:i] + "äöüÄÖÜ"["aouAOU".index(de[i])] + de[i + 1:] + pl[1:]
        elif not pl[:1].isupper():
            pl = de + pl
        gi = "mfn".index(g)
        out.append(_Noun(en, en_pl or _en_s(en), de, pl, _genitive(de, gi), pl if pl[-1] in "ns" else pl + "n", gi))
    return tuple(out)


def _words(src: str) -> tuple[_Word, ...]:
    """Parse "en:de" items, "_" for a space; a lone word ("Berlin") is the same in both."""
    pairs = [item.replace("_", " ").partition(":") for item in src.split()]
    return tuple(_Word(en, de or en, en.count(" ") + 1) for en, _, de in pairs)


def _verbs(frame: str, src: str) -> tuple[_Verb, ...]:
    """Parse "en:infinitive[:3sg]" items; "an|rufen" marks a separable particle, and the third
    person singular is given only where it is not the stem + t (et after t, d, chn, ffn)."""
    out = []
    for item in src.split():
        en, inf, *de3 = item.split(":")
        en = en.replace("_", " ")
        head, _, rest = en.partition(" ")
        part, _, stem = inf.rpartition("|")
        base = stem[:-2] if stem.endswith("en") else stem[:-1]
        de3 = de3[0] if de3 else base + ("et" if base.endswith(("t", "d", "chn", "ffn")) else "t")
        out.append(_Verb(en, " ".join([_en_s(head, True)] + [rest] * bool(rest)), en, part + stem, de3, stem,
                         part, frame, en.count(" ") + 1))
    return tuple(out)


# ------------------------------------------------------------------ lexicon
_PEOPLE = _nouns("""man|men:Mann:¨er:m woman|women:Frau:en:f child|children:Kind:er:n teacher:Lehrer::m
doctor:Arzt:¨e:m baker:Bäcker::m farmer:Landwirt:e:m waiter:Kellner::m driver:Fahrer::m painter:Maler::m
singer:Sänger::m dancer:Tänzer::m king:König:e:m queen:Königin:nen:f friend:Freund:e:m girl:Mädchen::n
brother:Bruder:¨:m sister:Schwester:n:f father:Vater:¨:m mother:Mutter:¨:f son:Sohn:¨e:m daughter:Tochter:¨:f
uncle:Onkel::m aunt:Tante:n:f baby:Baby:s:n guest:Gast:¨e:m thief|thieves:Dieb:e:m pupil:Schüler::m
scientist:Wissenschaftler::m lawyer:Anwalt:¨e:m writer:Schriftsteller::m actor:Schauspieler::m musician:Musiker::m
worker:Arbeiter::m captain:Kapitän:e:m fisherman|fishermen:Fischer::m hunter:Jäger::m gardener:Gärtner::m
player:Spieler::m engineer:Ingenieur:e:m grandmother:Großmutter:¨:f grandfather:Großvater:¨:m""")
_ANIMALS = _nouns("""dog:Hund:e:m cat:Katze:n:f horse:Pferd:e:n cow:Kuh:¨e:f pig:Schwein:e:n bird:Vogel:¨:m
mouse|mice:Maus:¨e:f fox:Fuchs:¨e:m wolf|wolves:Wolf:¨e:m duck:Ente:n:f goat:Ziege:n:f chicken:Huhn:¨er:n
frog:Frosch:¨e:m snake:Schlange:n:f spider:Spinne:n:f owl:Eule:n:f whale:Wal:e:m shark:Hai:e:m tiger:Tiger::m
camel:Kamel:e:n donkey:Esel::m rabbit:Kaninchen::n bee:Biene:n:f butterfly:Schmetterling:e:m turtle:Schildkröte:n:f
penguin:Pinguin:e:m squirrel:Eichhörnchen::n""")
_FOODS = _nouns("""apple:Apfel:¨:m pear:Birne:n:f banana:Banane:n:f cake:Kuchen::m egg:Ei:er:n
potato|potatoes:Kartoffel:n:f tomato|tomatoes:Tomate:n:f carrot:Karotte:n:f sausage:Wurst:¨e:f soup:Suppe:n:f
pizza:Pizza:Pizzen:f cookie:Keks:e:m lemon:Zitrone:n:f onion:Zwiebel:n:f cherry:Kirsche:n:f strawberry:Erdbeere:n:f
bread:Brot:e:n nut:Nuss:¨e:f melon:Melone:n:f cucumber:Gurke:n:f""")
_THINGS = _nouns("""book:Buch:¨er:n ball:Ball:¨e:m car:Auto:s:n bicycle:Fahrrad:¨er:n letter:Brief:e:m
table:Tisch:e:m chair:Stuhl:¨e:m door:Tür:en:f window:Fenster::n key:Schlüssel::m cup:Tasse:n:f glass:Glas:¨er:n
plate:Teller::m knife|knives:Messer::n spoon:Löffel::m bottle:Flasche:n:f hat:Hut:¨e:m coat:Mantel:¨:m
shoe:Schuh:e:m bag:Tasche:n:f box:Kiste:n:f picture:Bild:er:n lamp:Lampe:n:f clock:Uhr:en:f computer:Computer::m
phone:Telefon:e:n radio:Radio:s:n newspaper:Zeitung:en:f pen:Stift:e:m map:Karte:n:f flower:Blume:n:f tree:Baum:¨e:m
stone:Stein:e:m umbrella:Schirm:e:m ring:Ring:e:m song:Lied:er:n story:Geschichte:n:f gift:Geschenk:e:n
toy:Spielzeug:e:n boat:Boot:e:n ship:Schiff:e:n train:Zug:¨e:m plane:Flugzeug:e:n guitar:Gitarre:n:f
piano:Klavier:e:n candle:Kerze:n:f mirror:Spiegel::m bed:Bett:en:n sofa:Sofa:s:n blanket:Decke:n:f
basket:Korb:¨e:m""")
_PLACES = _nouns("""house:Haus:¨er:n park:Park:s:m garden:Garten:¨:m school:Schule:n:f station:Bahnhof:¨e:m
kitchen:Küche:n:f room:Zimmer::n shop:Laden:¨:m church:Kirche:n:f forest:Wald:¨er:m river:Fluss:¨e:m lake:See:n:m
mountain:Berg:e:m village:Dorf:¨er:n city:Stadt:¨e:f street:Straße:n:f bridge:Brücke:n:f castle:Schloss:¨er:n
library:Bibliothek:en:f museum:Museum:Museen:n hospital:Krankenhaus:¨er:n restaurant:Restaurant:s:n hotel:Hotel:s:n
office:Büro:s:n market:Markt:¨e:m square:Platz:¨e:m beach:Strand:¨e:m island:Insel:n:f farm:Bauernhof:¨e:m
zoo:Zoo:s:m cinema:Kino:s:n theatre:Theater::n tower:Turm:¨e:m field:Feld:er:n harbour:Hafen:¨:m
airport:Flughafen:¨:m""")
_ANIMATE, _WHERE = _PEOPLE + _ANIMALS, _THINGS + _PLACES
_NOUN_ALL = _ANIMATE + _FOODS + _WHERE
_ADJS = _words("""big:groß small:klein old:alt young:jung new:neu good:gut bad:schlecht beautiful:schön
ugly:hässlich happy:glücklich sad:traurig tired:müde hungry:hungrig thirsty:durstig fast:schnell slow:langsam
loud:laut quiet:leise clean:sauber dirty:schmutzig warm:warm cold:kalt hot:heiß friendly:freundlich clever:klug
stupid:dumm strong:stark weak:schwach funny:lustig rich:reich poor:arm famous:berühmt strange:seltsam brave:mutig
lazy:faul proud:stolz long:lang short:kurz heavy:schwer light:leicht fresh:frisch sweet:süß wild:wild cheap:billig
empty:leer full:voll round:rund soft:weich hard:hart nice:nett angry:wütend curious:neugierig shy:schüchtern red:rot
blue:blau green:grün yellow:gelb black:schwarz white:weiß brown:braun grey:grau""")
_TIME = _words("""today:heute tomorrow:morgen now:jetzt often:oft always:immer sometimes:manchmal again:wieder
soon:bald early:früh late:spät every_day:jeden_Tag every_week:jede_Woche in_the_morning:am_Morgen
in_the_evening:am_Abend at_night:in_der_Nacht at_noon:am_Mittag on_Monday:am_Montag on_Tuesday:am_Dienstag
on_Wednesday:am_Mittwoch on_Thursday:am_Donnerstag on_Friday:am_Freitag on_Saturday:am_Samstag
on_Sunday:am_Sonntag""")
_MANNER = _words("""quickly:schnell slowly:langsam carefully:vorsichtig quietly:leise loudly:laut happily:fröhlich
gladly:gern together:zusammen alone:allein well:gut badly:schlecht patiently:geduldig secretly:heimlich calmly:ruhig
proudly:stolz""")
_NAMES = _words("Anna Peter Maria Thomas Lena Paul Sophie Max Julia Felix")
_CITIES = _words("""Berlin Paris London Hamburg Munich:München Vienna:Wien Rome:Rom Cologne:Köln Prague:Prag
Zurich:Zürich Venice:Venedig Moscow:Moskau Lisbon:Lissabon Brussels:Brüssel Warsaw:Warschau Athens:Athen
Copenhagen:Kopenhagen""")
_PRONOUNS = tuple(zip(_words("he:er she:sie we:wir they:sie"), (False, False, True, True)))  # (word, plural)
_SUB_CONJ = _words("because:weil although:obwohl if:wenn while:während before:bevor as_soon_as:sobald")
_THAT = _Word("that", "dass", 1)  # after "says"; in a relative clause the German is a relative pronoun
_VERBS = {"i": _verbs("i", """sleep:schlafen:schläft laugh:lachen work:arbeiten sing:singen dance:tanzen
play:spielen cry:weinen bark:bellen smile:lächeln dream:träumen wait:warten sit:sitzen live:wohnen get_up:auf|stehen
fall_asleep:ein|schlafen:schläft wake_up:auf|wachen join_in:mit|machen"""),
          "m": _verbs("m", """go:gehen come:kommen run:laufen:läuft swim:schwimmen travel:reisen fly:fliegen
drive:fahren:fährt arrive:an|kommen depart:ab|fahren:fährt come_back:zurück|kommen go_out:aus|gehen"""),
          "a": _verbs("a", """see:sehen:sieht like:mögen:mag read:lesen:liest buy:kaufen find:finden cook:kochen
eat:essen:isst drink:trinken write:schreiben know:kennen love:lieben paint:malen draw:zeichnen visit:besuchen
hear:hören need:brauchen sell:verkaufen carry:tragen:trägt wash:waschen:wäscht catch:fangen:fängt open:öffnen
build:bauen hold:halten:hält forget:vergessen:vergisst take:nehmen:nimmt count:zählen understand:verstehen
ask:fragen feed:füttern repair:reparieren order:bestellen describe:beschreiben look_for:suchen call:an|rufen
invite:ein|laden:lädt look_at:an|schauen close:zu|machen collect:ab|holen bring:mit|bringen prepare:vor|bereiten
switch_on:ein|schalten switch_off:aus|schalten tidy_up:auf|räumen"""),
          "d": _verbs("d", """help:helfen:hilft thank:danken follow:folgen answer:antworten trust:vertrauen
congratulate:gratulieren listen_to:zu|hören belong_to:gehören"""),
          "ad": _verbs("ad", "give:geben:gibt show:zeigen send:schicken tell:erzählen lend:leihen offer:an|bieten"),
          "s": _verbs("s", "say:sagen think:denken believe:glauben hope:hoffen notice:bemerken"),
          "c": (_Verb("be", "is", "are", "sein", "ist", "sind", "", "c", 1),)}
_CASES = {"a": (1,), "d": (2,), "ad": (2, 1)}  # German case of each object, in English (= German) order
# frames for a new clause, repeated by weight: with and without "says that", relative by gap (-1 subject, 0 object)
_FRAMES_NOSAY = ("i",) * 4 + ("m",) * 4 + ("a",) * 10 + ("d",) * 3 + ("ad",) * 2 + ("c",) * 3
_FRAMES = _FRAMES_NOSAY + ("s",) * 2
_FRAMES_REL = {-1: ("i",) * 4 + ("m",) * 2 + ("a",) * 6 + ("d",) * 2 + ("c",) * 3, 0: ("a",) * 3 + ("d",)}
_MODALS = (_Modal(("can", "can"), ("cannot", "cannot"), ("kann", "können"), 1, 1),
           _Modal(("must", "must"), None, ("muss", "müssen"), 1, 1),
           _Modal(("should", "should"), ("should not", "should not"), ("soll", "sollen"), 1, 2),
           _Modal(("wants to", "want to"), ("does not want to", "do not want to"), ("will", "wollen"), 2, 4),
           _Modal(("would like to", "would like to"), None, ("möchte", "möchten"), 3, 3))
_POSS = tuple(_Det(w.en, w.en, w.en, "ein", w.de)
              for w in _words("my:mein your:dein his:sein her:ihr our:unser their:ihr"))
_THE, _A = _Det("the", "the", "the", "def", ""), _Det("a", "a", "", "ein", "ein")
_THIS, _BARE = _Det("this", "this", "these", "dies", "dies"), _Det("bare", "", "", "bare", "")
_NUMS = tuple(_Det(w.en, "", w.en, "num", w.de) for w in _words(
    "two:zwei three:drei four:vier five:fünf six:sechs seven:sieben eight:acht nine:neun ten:zehn eleven:elf "
    "twelve:zwölf")) + (_Det("many", "", "many", "strong", "viel"), _Det("some", "", "some", "strong", "einig"))
_SG_DETS = (_THE,) * 4 + (_A,) * 3 + _POSS + (_THIS,)
_PL_DETS = (_THE,) * 3 + (_BARE,) * 3 + _POSS[:3] + (_THIS,)
_PL_DETS_NUM = _PL_DETS * 3 + _NUMS  # subjects and prepositional objects; "not two dogs" has no kein
_GEN_PL_DETS = (_THE, _THE) + _POSS[:3] + (_THIS,)  # "of dogs" would need "von", not a genitive
_PLACE_PREPS = (_Prep("in", "in", 2, "in", 1), _Prep("on", "auf", 2, "", 1), _Prep("under", "unter", 2, "", 1),
                _Prep("behind", "hinter", 2, "", 1), _Prep("next to", "neben", 2, "", 2),
                _Prep("in front of", "vor", 2, "", 3), _Prep("at", "an", 2, "", 1))
_TO = _Prep("to", "zu", 2, "nach", 1)  # direction, only after a motion verb
_MOD_PREPS = (_Prep("of", "", 3, "", 1), _Prep("of", "", 3, "", 1), _Prep("with", "mit", 2, "", 1),
              _Prep("without", "ohne", 1, "", 1), _Prep("from", "aus", 2, "aus", 1), _Prep("for", "für", 1, "", 1))
_CONTRACT = {("in", "dem"): "im", ("an", "dem"): "am", ("zu", "dem"): "zum", ("zu", "der"): "zur"}

# German inflection, indexed [case][gender]: case 0 nom, 1 acc, 2 dat, 3 gen; gender 3 = plural.
_DEF = (("der", "die", "das", "die"), ("den", "die", "das", "die"), ("dem", "der", "dem", "den"),
        ("des", "der", "des", "der"))
_EIN = (("", "e", "", "e"), ("en", "e", "", "e"), ("em", "er", "em", "en"), ("es", "er", "es", "er"))
_DIES = (("er", "e", "es", "e"), ("en", "e", "es", "e"), ("em", "er", "em", "en"), ("es", "er", "es", "er"))
_WEAK = (("e", "e", "e", "en"), ("en", "e", "e", "en"), ("en",) * 4, ("en",) * 4)  # after der, dieser
_MIXED = (("er", "e", "es", "en"), ("en", "e", "es", "en"), ("en",) * 4, ("en",) * 4)  # after ein, kein, mein
_STRONG = _DIES  # no article: only plurals get here, where strong endings equal those of dieser
_REL = (_DEF[0], _DEF[1], ("dem", "der", "dem", "denen"))


# ------------------------------------------------------------------ generation
class _Gen:
    """Builds sentences top-down, English and German side by side, each part within a word budget.

    The English side is a list of single words, so its length is ``len()``; German comes out as
    tokens with "," standing alone until :func:`_finish` attaches it.
    """

    def __init__(self, rng: Random) -> None:
        self.rng = rng

    def pick(self, seq):
        return seq[int(self.rng.random() * len(seq))]

    def np(self, room: int, case: int, depth: int, kein: bool = False, pool=_NOUN_ALL, dets=_PL_DETS,
           plural_p: float = 0.35, names: bool = True) -> tuple[list[str], list[str], int, bool]:
        """A noun phrase of 1..room English words, German in `case` -> (english, german, g, kein used).

        g is the gender, 3 for a plural. Pronouns only as subjects (case 0), names neither in the
        genitive nor where names=False (room >= 2 there). At depth 0 the noun may take a modifier
        ("with the ball", "of the teacher") or a relative clause, deeper ones only adjectives.
        """
        rng = self.rng
        r = rng.random()
        if case == 0 and (r < 0.1 or room == 1 and r < 0.5):
            w, plural = self.pick(_PRONOUNS)
            return [w.en], [w.de], 3 if plural else 0, False
        if case != 3 and names and (0.1 <= r < 0.14 or room == 1):
            w = self.pick(_NAMES)
            return [w.en], [w.de], 0, False
        noun, plural = self.pick(pool), rng.random() < plural_p
        det, g = self.pick(dets if plural else _SG_DETS), 3 if plural else noun.g
        adjs: list[_Word] = []
        for _ in range(int(rng.random() * (min(1 if depth else 3, room - 1 - (det.kind != "bare")) + 1))):
            a = self.pick(_ADJS)
            adjs += [a] * (a not in adjs)
        kein = kein and det.key in ("a", "bare")  # not a dog -> kein Hund, not dogs -> keine Hunde
        if kein or det.kind == "ein":
            de, table = [("kein" if kein else det.stem) + _EIN[case][g]], _MIXED
        elif det.kind in ("def", "dies"):
            de, table = [_DEF[case][g] if det.kind == "def" else det.stem + _DIES[case][g]], _WEAK
        else:  # numbers, viele, einige or nothing: strong endings
            table = _STRONG
            de = [det.stem + (_STRONG[case][g] if det.kind == "strong" else "")] * (det.kind != "bare")
        de += [(a.de[:-1] if a.de[-1] == "e" else a.de) + table[case][g] for a in adjs]  # müde -> müden
        de.append((noun.de_dat_pl if case == 2 else noun.de_pl) if plural else noun.de_gen if case == 3 else noun.de)
        w = det.en_pl if plural else det.en_sg
        w = "an" if w == "a" and (adjs[0].en if adjs else noun.en)[0] in "aeiou" else w
        en = [w] * bool(w) + [a.en for a in adjs] + [noun.en_pl if plural else noun.en]
        left = room - len(en)
        if depth == 0 and left >= 3 and rng.random() < 0.5:
            if rng.random() < 0.5:
                rel = self.clause(left, 2, _THAT, gap=-1 if rng.random() < 0.5 else 0, ante_g=g)
                if rel:
                    en, de = en + rel[0], de + [","] + rel[1] + [","]
            else:
                pe, pd = self.pp(self.pick(_MOD_PREPS), left)
                en, de = en + pe, de + pd
        return en, de, g, kein

    def pp(self, prep: _Prep, room: int, place: bool = False) -> tuple[list[str], list[str]]:
        """Preposition and noun phrase in its case within `room` words; in dem -> im, zu der -> zur."""
        if prep.de_city and self.rng.random() < 0.3:
            w = self.pick(_CITIES)
            return prep.en.split() + [w.en], [prep.de_city, w.de]
        dets = _GEN_PL_DETS if prep.case == 3 else _PL_DETS if place else _PL_DETS_NUM
        en, de, _, _ = self.np(room - prep.n, prep.case, 1, pool=_WHERE if place else _NOUN_ALL, dets=dets,
                               plural_p=0.1 if place else 0.3, names=not place)
        short = _CONTRACT.get((prep.de, de[0]))
        return prep.en.split() + en, [short] + de[1:] if short else [prep.de] * bool(prep.de) + de

    def clause(self, room: int, mode: int, conj: Optional[_Word] = None, gap: Optional[int] = None,
               ante_g: int = 0, say: bool = True) -> Optional[tuple[list[str], list[str]]]:
        """A clause of at most `room` English words -> (english, german), None if nothing fits.

        mode 0: main clause, 1: inverted (after a fronted clause), 2: verb-final. A relative clause
        has a gap: -1 its subject, 0 its object is the antecedent, of gender ante_g. German order:
        time, objects (dative before accusative), nicht, manner, place, then particle or infinitive.
        """
        rng = self.rng
        frames = (_FRAMES if say else _FRAMES_NOSAY) if gap is None else _FRAMES_REL[gap]
        for attempt in range(20):  # draw a skeleton that fits; the last try is "he sleeps"
            last = attempt == 19 and gap is None
            frame = "i" if last else self.pick(frames)
            verb, cases = _VERBS[frame][0] if last else self.pick(_VERBS[frame]), _CASES.get(frame, ())
            modal = self.pick(_MODALS) if gap is None and not last and rng.random() < 0.2 else None
            neg = not last and rng.random() < 0.25 and (modal is None or modal.neg is not None)
            n_verb = (modal.n_neg if neg else modal.n) if modal else (1 if frame == "c" else 2) * neg
            fixed = (conj.n if conj else 0) + verb.n + n_verb + (frame == "c") + 3 * (frame == "s")
            n_np = (gap != -1) + len(cases) - (gap == 0)
            np_min = 2 if fixed + 2 * n_np <= room else 1  # "the dog"; a name or pronoun when tight
            if fixed + np_min * n_np <= room:
                break
        else:
            return None
        extra, g, pending = room - fixed - np_min * n_np, ante_g, neg  # pending: "not" not yet turned kein
        subj_en, subj_de, objs_en, objs_de = [], [], [], []
        if gap != -1:
            subj_en, subj_de, g, _ = self.np(np_min + int(rng.random() * (extra + 1)), 0, gap is not None,
                                             pool=_ANIMATE if rng.random() < 0.85 else _NOUN_ALL, dets=_PL_DETS_NUM)
            extra -= len(subj_en) - np_min
        for i, case in enumerate(cases):
            if i != gap:
                oe, od, _, used = self.np(np_min + int(rng.random() * (extra + 1)), case, gap is not None, pending,
                                          pool=_ANIMATE if case == 2 else _NOUN_ALL)
                objs_en, objs_de, pending = objs_en + oe, objs_de + od, pending and not used
                extra -= len(oe) - np_min
        pred = self.pick(_ADJS) if frame == "c" else None
        time = manner = place = None
        if gap is None and frame != "s":  # adverbials use what the noun phrases left over
            if rng.random() < 0.35 and (t := self.pick(_TIME)).n <= extra:
                time, extra = t, extra - t.n
            if frame != "c" and extra and rng.random() < 0.3:
                manner, extra = self.pick(_MANNER), extra - 1
            prep = _TO if frame == "m" and rng.random() < 0.5 else self.pick(_PLACE_PREPS)
            if extra >= prep.n + 2 and rng.random() < 0.35:
                place = self.pp(prep, prep.n + 2 + int(rng.random() * (extra - prep.n - 1)), place=True)
                extra -= len(place[0])
        comp = self.clause(3 + extra, 2, _THAT, say=False) if frame == "s" else None  # "that he sleeps" fits

        pl = int(g == 3)
        if modal:
            verb_en = (modal.neg if neg else modal.en)[pl].split() + verb.en.split()
            fin, tail = modal.de[pl], verb.de_inf
        else:
            verb_en = ([verb.en_pl if pl else verb.en3, "not"] if frame == "c" else ["do" if pl else "does", "not"]
                       + verb.en.split()) if neg else (verb.en_pl if pl else verb.en3).split()
            fin, tail = (verb.part if mode == 2 else "") + (verb.de_pl if pl else verb.de3), verb.part
        en = (conj.en.split() if conj else []) + subj_en + verb_en + objs_en + [w.en for w in (pred, manner) if w]
        en += (place[0] if place else []) + (time.en.split() if time else []) + (comp[0] if comp else [])
        place_de = place[1] if place else []
        mid = ([time.de] if time else []) + objs_de + (place_de if frame == "c" else [])  # ist im Park nicht müde
        mid += ["nicht"] * pending + ([manner.de] if manner else []) + ([] if frame == "c" else place_de)
        mid += [pred.de] if pred else []
        if mode == 2:
            first = conj.de if gap is None else _REL[cases[0] if gap == 0 else 0][ante_g]  # den, dem, die, ...
            de = [first] + subj_de + mid + ([tail, fin] if modal else [fin])
        else:
            de = (subj_de + [fin] if mode == 0 else [fin] + subj_de) + mid + [tail] * bool(tail)
        return en, de + ([","] + comp[1] + [","] if comp else [])

    def sentence(self, target: int) -> tuple[list[str], list[str]]:
        """Clauses joined by and/und, subordinating conjunctions or a fronted clause, up to `target` words."""
        rng = self.rng

        def chunk(room: int) -> int:  # long sentences get several clauses of 4..15 words
            return room if room <= 15 else 4 + int(rng.random() * 12)

        en: list[str] = []
        de: list[str] = []
        if target >= 8 and rng.random() < 0.15:  # "if the dog barks, the man sleeps" / "..., schläft der Mann"
            front = self.clause(min(target - 2, 4 + int(rng.random() * 8)), 2, self.pick(_SUB_CONJ[:4]), say=False)
            if front:
                en, de = front[0], front[1] + [","]
                en[-1] += ","
        main = self.clause(chunk(target - len(en)), 1 if en else 0)
        if main is None:
            return [], []
        en, de, fails = en + main[0], de + main[1], 0
        while target - len(en) >= 3 and fails < 5:
            room = target - len(en)
            if rng.random() < 0.35:  # "and" only ever joins main clauses
                c = self.clause(chunk(room - 1), 0)
                if c:
                    en, de = en + ["and"] + c[0], de + ["und"] + c[1]
            else:  # each subordinate clause hangs on the one before; the German is the same either way
                c = self.clause(chunk(room), 2, self.pick(_SUB_CONJ))
                if c:
                    en, de = en + c[0], de + [","] + c[1] + [","]
            fails += c is None
        return en, de


def _finish(tokens: list[str]) -> str:
    """Attach commas to the word before, drop doubled or trailing ones, capitalize, add the period."""
    s = re.sub(r"( ,)+", ",", " ".join(tokens)).rstrip(",")
    return s[0].upper() + s[1:] + "."


# ------------------------------------------------------------------ public interface
def generate_pairs(n: int, seed: int, min_words: int = 3, max_words: int = 40) -> list[tuple[str, str]]:
    """n (english, german) sentence pairs; same (n, seed, ...) -> identical output, on any machine/python.

    Each pair draws a length uniformly from [min_words, max_words] and grows the sentence to it (or a
    word or two short; redrawn if that falls outside), counting English words split at whitespace.
    """
    if n < 0 or min_words < 3 or max_words < min_words:
        raise ValueError(f"need n >= 0 and 3 <= min_words <= max_words, got {n=}, {min_words=}, {max_words=}")
    gen, pairs = _Gen(Random(seed)), []
    while len(pairs) < n:
        target = min_words + int(gen.rng.random() * (max_words - min_words + 1))
        en, de = gen.sentence(target)
        if min_words <= len(en) <= max_words:
            pairs.append((_finish(en), _finish(de)))
    return pairs


def split_seed(seed: int, split: str) -> int:
    """The generator seed of one split: ``seed * 2**32 + crc32(split name)`` (stable across runs)."""
    return seed * 2**32 + zlib.crc32(split.encode("utf-8"))


def write_corpus(out_dir: pathlib.Path, sizes: dict[str, int], seed: int, min_words: int = 3,
                 max_words: int = 40) -> dict[str, int]:
    """Write {split}.en and {split}.de (UTF-8, one sentence per line, '\\n' endings) for each split.

    Each split draws from its own seed, ``seed * 2**32 + crc32(split name)`` (not the salted
    ``hash()``), so splits are independent streams and adding a split changes no other; the same
    arguments give byte-identical files. Returns the number of lines written per split.
    """
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, size in sizes.items():
        pairs = generate_pairs(size, split_seed(seed, split), min_words, max_words)
        for side, lang in enumerate(("en", "de")):
            with open(out_dir / f"{split}.{lang}", "w", encoding="utf-8", newline="\n") as f:
                f.writelines(p[side] + "\n" for p in pairs)
        counts[split] = len(pairs)
    return counts
