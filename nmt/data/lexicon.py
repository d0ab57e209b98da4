"""The lexicon and grammar tables of the synthetic English-German corpus.

Nouns with gender and plural, adjectives, verbs by argument frame (with separable
particles), modal verbs, determiners, prepositions with their case, and the German
article and adjective-ending tables.  Compact strings are parsed at import; the
sentence generator itself is :mod:`nmt.data.synthetic`.
"""

from __future__ import annotations

from typing import NamedTuple, Optional


# g: 0 masculine, 1 feminine, 2 neuter (3 stands for any plural in the tables below)
class _Noun(NamedTuple):
    en: str
    en_pl: str
    de: str
    de_pl: str
    de_gen: str
    de_dat_pl: str
    g: int


class _Word(NamedTuple):
    en: str
    de: str
    n: int  # English word count


# en / en3 / en_pl: look at / looks at / look at; de_inf joins the particle (anrufen), de3, de_pl leave it off
# (ruft, rufen). frame: i, m (motion), a (accusative), d (dative), ad (both), s (says that ...), c (is + adjective)
class _Verb(NamedTuple):
    en: str
    en3: str
    en_pl: str
    de_inf: str
    de3: str
    de_pl: str
    part: str
    frame: str
    n: int


# (singular, plural) forms; neg None where German would not mean the same ("muss nicht").
class _Modal(NamedTuple):
    en: tuple
    neg: Optional[tuple]
    de: tuple
    n: int
    n_neg: int


class _Det(NamedTuple):
    key: str
    en_sg: str
    en_pl: str
    kind: str
    stem: str


# case: 1 accusative, 2 dative, 3 genitive ("of"); de_city: German word before a city, "" if none
class _Prep(NamedTuple):
    en: str
    de: str
    case: int
    de_city: str
    n: int


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
            i -= i > 0 and de[i - 1 : i + 1] == "au"  # Haus -> Häuser
            pl = de[:i] + "äöüÄÖÜ"["aouAOU".index(de[i])] + de[i + 1 :] + pl[1:]
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
        en, inf, *given = item.split(":")
        en = en.replace("_", " ")
        head, _, rest = en.partition(" ")
        part, _, stem = inf.rpartition("|")
        base = stem[:-2] if stem.endswith("en") else stem[:-1]
        de3 = given[0] if given else base + ("et" if base.endswith(("t", "d", "chn", "ffn")) else "t")
        out.append(
            _Verb(
                en,
                " ".join([_en_s(head, True)] + [rest] * bool(rest)),
                en,
                part + stem,
                de3,
                stem,
                part,
                frame,
                en.count(" ") + 1,
            )
        )
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
_VERBS = {
    "i": _verbs(
        "i",
        """sleep:schlafen:schläft laugh:lachen work:arbeiten sing:singen dance:tanzen
play:spielen cry:weinen bark:bellen smile:lächeln dream:träumen wait:warten sit:sitzen live:wohnen get_up:auf|stehen
fall_asleep:ein|schlafen:schläft wake_up:auf|wachen join_in:mit|machen""",
    ),
    "m": _verbs(
        "m",
        """go:gehen come:kommen run:laufen:läuft swim:schwimmen travel:reisen fly:fliegen
drive:fahren:fährt arrive:an|kommen depart:ab|fahren:fährt come_back:zurück|kommen go_out:aus|gehen""",
    ),
    "a": _verbs(
        "a",
        """see:sehen:sieht like:mögen:mag read:lesen:liest buy:kaufen find:finden cook:kochen
eat:essen:isst drink:trinken write:schreiben know:kennen love:lieben paint:malen draw:zeichnen visit:besuchen
hear:hören need:brauchen sell:verkaufen carry:tragen:trägt wash:waschen:wäscht catch:fangen:fängt open:öffnen
build:bauen hold:halten:hält forget:vergessen:vergisst take:nehmen:nimmt count:zählen understand:verstehen
ask:fragen feed:füttern repair:reparieren order:bestellen describe:beschreiben look_for:suchen call:an|rufen
invite:ein|laden:lädt look_at:an|schauen close:zu|machen collect:ab|holen bring:mit|bringen prepare:vor|bereiten
switch_on:ein|schalten switch_off:aus|schalten tidy_up:auf|räumen""",
    ),
    "d": _verbs(
        "d",
        """help:helfen:hilft thank:danken follow:folgen answer:antworten trust:vertrauen
congratulate:gratulieren listen_to:zu|hören belong_to:gehören""",
    ),
    "ad": _verbs("ad", "give:geben:gibt show:zeigen send:schicken tell:erzählen lend:leihen offer:an|bieten"),
    "s": _verbs("s", "say:sagen think:denken believe:glauben hope:hoffen notice:bemerken"),
    "c": (_Verb("be", "is", "are", "sein", "ist", "sind", "", "c", 1),),
}
_CASES = {"a": (1,), "d": (2,), "ad": (2, 1)}  # German case of each object, in English (= German) order
# frames for a new clause, repeated by weight: with and without "says that", relative by gap (-1 subject, 0 object)
_FRAMES_NOSAY = ("i",) * 4 + ("m",) * 4 + ("a",) * 10 + ("d",) * 3 + ("ad",) * 2 + ("c",) * 3
_FRAMES = _FRAMES_NOSAY + ("s",) * 2
_FRAMES_REL = {-1: ("i",) * 4 + ("m",) * 2 + ("a",) * 6 + ("d",) * 2 + ("c",) * 3, 0: ("a",) * 3 + ("d",)}
_MODALS = (
    _Modal(("can", "can"), ("cannot", "cannot"), ("kann", "können"), 1, 1),
    _Modal(("must", "must"), None, ("muss", "müssen"), 1, 1),
    _Modal(("should", "should"), ("should not", "should not"), ("soll", "sollen"), 1, 2),
    _Modal(("wants to", "want to"), ("does not want to", "do not want to"), ("will", "wollen"), 2, 4),
    _Modal(("would like to", "would like to"), None, ("möchte", "möchten"), 3, 3),
)
_POSS = tuple(
    _Det(w.en, w.en, w.en, "ein", w.de) for w in _words("my:mein your:dein his:sein her:ihr our:unser their:ihr")
)
_THE, _A = _Det("the", "the", "the", "def", ""), _Det("a", "a", "", "ein", "ein")
_THIS, _BARE = _Det("this", "this", "these", "dies", "dies"), _Det("bare", "", "", "bare", "")
_NUMS = tuple(
    _Det(w.en, "", w.en, "num", w.de)
    for w in _words(
        "two:zwei three:drei four:vier five:fünf six:sechs seven:sieben eight:acht nine:neun ten:zehn eleven:elf "
        "twelve:zwölf"
    )
) + (_Det("many", "", "many", "strong", "viel"), _Det("some", "", "some", "strong", "einig"))
_SG_DETS = (_THE,) * 4 + (_A,) * 3 + _POSS + (_THIS,)
_PL_DETS = (_THE,) * 3 + (_BARE,) * 3 + _POSS[:3] + (_THIS,)
_PL_DETS_NUM = _PL_DETS * 3 + _NUMS  # subjects and prepositional objects; "not two dogs" has no kein
_GEN_PL_DETS = (_THE, _THE) + _POSS[:3] + (_THIS,)  # "of dogs" would need "von", not a genitive
_PLACE_PREPS = (
    _Prep("in", "in", 2, "in", 1),
    _Prep("on", "auf", 2, "", 1),
    _Prep("under", "unter", 2, "", 1),
    _Prep("behind", "hinter", 2, "", 1),
    _Prep("next to", "neben", 2, "", 2),
    _Prep("in front of", "vor", 2, "", 3),
    _Prep("at", "an", 2, "", 1),
)
_TO = _Prep("to", "zu", 2, "nach", 1)  # direction, only after a motion verb
_MOD_PREPS = (
    _Prep("of", "", 3, "", 1),
    _Prep("of", "", 3, "", 1),
    _Prep("with", "mit", 2, "", 1),
    _Prep("without", "ohne", 1, "", 1),
    _Prep("from", "aus", 2, "aus", 1),
    _Prep("for", "für", 1, "", 1),
)
_CONTRACT = {("in", "dem"): "im", ("an", "dem"): "am", ("zu", "dem"): "zum", ("zu", "der"): "zur"}

# German inflection, indexed [case][gender]: case 0 nom, 1 acc, 2 dat, 3 gen; gender 3 = plural.
_DEF = (
    ("der", "die", "das", "die"),
    ("den", "die", "das", "die"),
    ("dem", "der", "dem", "den"),
    ("des", "der", "des", "der"),
)
_EIN = (("", "e", "", "e"), ("en", "e", "", "e"), ("em", "er", "em", "en"), ("es", "er", "es", "er"))
_DIES = (("er", "e", "es", "e"), ("en", "e", "es", "e"), ("em", "er", "em", "en"), ("es", "er", "es", "er"))
_WEAK = (("e", "e", "e", "en"), ("en", "e", "e", "en"), ("en",) * 4, ("en",) * 4)  # after der, dieser
_MIXED = (("er", "e", "es", "en"), ("en", "e", "es", "en"), ("en",) * 4, ("en",) * 4)  # after ein, kein, mein
_STRONG = _DIES  # no article: only plurals get here, where strong endings equal those of dieser
_REL = (_DEF[0], _DEF[1], ("dem", "der", "dem", "denen"))


# ------------------------------------------------------------------ generation
