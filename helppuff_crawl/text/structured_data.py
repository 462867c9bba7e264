"""Business facts from a page's structured data. Pure: no Scrapy import.

`extract_facts(html, url)` reads:

- JSON-LD (each <script type="application/ld+json"> on its own, so one broken block loses only
  itself), microdata and RDFa (through extruct). The business is the best LocalBusiness-kin
  entity (a known LocalBusiness subtype such as Plumber or Dentist, or any type with "Business"
  in its name), else an Organization-kin one, wherever it sits (top level, @graph, nested as a
  publisher or provider); gaps are filled from the other business entities. From it: name,
  telephone, email, address (a PostalAddress as one line, or a plain string), opening hours
  (openingHours strings, read by hours.py, and openingHoursSpecification) as a weekly table, areas
  served and price range. A LocalBusiness-kin entity at another address (a second clinic, a branch,
  often nested as a `department`) is another location: its name, address, telephone and hours are
  kept as such, never mixed into the business's own. FAQPage entities add their question/answer
  pairs (HTML answers as text).
- tel: and mailto: links (contact_details.py; digits and "+" kept; the address only, lower-cased)
  and the meta description.

Nothing here is fatal: invalid JSON, unknown types and odd values (numbers where text is
expected, nested lists) are skipped and listed in `Facts.problems`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import extruct
import lxml.html
from lxml import etree

from helppuff_crawl.text.business_facts import Facts, Location, add_location, place_key
from helppuff_crawl.text.contact_details import contact_links
from helppuff_crawl.text.hours import DAYS, day_named, opening_clock, read_opening_hours
from helppuff_crawl.text.html_text import block_text, collapse, decode_html, parse_html
from helppuff_crawl.text.markdown import meta_description

logger = logging.getLogger(__name__)


# -- types ---------------------------------------------------------------------------------------------------

# schema.org's LocalBusiness and its subtypes (any type with "Business" in its name counts too).
_LOCAL_TYPES = frozenset("""
LocalBusiness AnimalShelter ArchiveOrganization AutomotiveBusiness AutoBodyShop AutoDealer AutoPartsStore AutoRental
AutoRepair AutoWash GasStation MotorcycleDealer MotorcycleRepair ChildCare Dentist DryCleaningOrLaundry
EmergencyService FireStation Hospital PoliceStation EmploymentAgency EntertainmentBusiness AdultEntertainment
AmusementPark ArtGallery Casino ComedyClub MovieTheater NightClub FinancialService AccountingService
AutomatedTeller BankOrCreditUnion InsuranceAgency FoodEstablishment Bakery BarOrPub Brewery CafeOrCoffeeShop
Distillery FastFoodRestaurant IceCreamShop Restaurant Winery GovernmentOffice PostOffice HealthAndBeautyBusiness
BeautySalon DaySpa HairSalon HealthClub NailSalon TattooParlor HomeAndConstructionBusiness Electrician
GeneralContractor HVACBusiness HousePainter Locksmith MovingCompany Plumber RoofingContractor InternetCafe
LegalService Attorney Notary Library LodgingBusiness BedAndBreakfast Campground Hostel Hotel Motel Resort
VacationRental MedicalBusiness CommunityHealth Dermatology DietNutrition Emergency Geriatric Gynecologic
MedicalClinic Midwifery Nursing Obstetric Oncologic Optician Optometric Otolaryngologic Pediatric Pharmacy
Physician Physiotherapy PlasticSurgery Podiatric PrimaryCare Psychiatric PublicHealth ProfessionalService
RadioStation RealEstateAgent RecyclingCenter SelfStorage ShoppingCenter SportsActivityLocation BowlingAlley
ExerciseGym GolfCourse PublicSwimmingPool SkiResort SportsClub StadiumOrArena TennisComplex Store BikeStore
BookStore ClothingStore ComputerStore ConvenienceStore DepartmentStore ElectronicsStore Florist FurnitureStore
GardenStore GroceryStore HardwareStore HobbyShop HomeGoodsStore JewelryStore LiquorStore MensClothingStore
MobilePhoneStore MovieRentalStore MusicStore OfficeEquipmentStore OutletStore PawnShop PetStore ShoeStore
SportingGoodsStore TireShop ToyStore WholesaleStore TelevisionStation TouristInformationCenter TravelAgency
VeterinaryCare
""".lower().split())
_ORGANIZATION_TYPES = frozenset("""
Organization Corporation NGO EducationalOrganization MedicalOrganization SportsOrganization NewsMediaOrganization
OnlineBusiness OnlineStore PerformingGroup Project ResearchOrganization WorkersUnion LibrarySystem Airline
Consortium CooperativeOrganization FundingScheme GovernmentOrganization PoliticalParty SearchRescueOrganization
""".lower().split())
# Types that are not a business and not a problem either: pages, navigation, content, parts.
_OTHER_TYPES = frozenset("""
Thing WebSite WebPage AboutPage ContactPage CollectionPage ItemPage CheckoutPage FAQPage QAPage ProfilePage
SearchResultsPage MedicalWebPage RealEstateListing WebPageElement WPHeader WPFooter WPSideBar SiteNavigationElement
Table BreadcrumbList ItemList ListItem HowTo HowToStep HowToSection Question Answer ImageObject VideoObject
AudioObject MediaObject CreativeWork Article NewsArticle BlogPosting Blog Report TechArticle ScholarlyArticle
SocialMediaPosting DiscussionForumPosting Comment Review AggregateRating Rating EmployerAggregateRating Person
Product ProductGroup ProductModel IndividualProduct Offer AggregateOffer OfferCatalog Demand PriceSpecification
UnitPriceSpecification MonetaryAmount QuantitativeValue Brand Service FinancialProduct Event BusinessEvent
EducationEvent Course CourseInstance Recipe NutritionInformation JobPosting Place Residence Accommodation
PostalAddress GeoCoordinates GeoShape GeoCircle Country City State AdministrativeArea ContactPoint
OpeningHoursSpecification SearchAction ReadAction ViewAction OrderAction ReserveAction EntryPoint PropertyValue
PropertyValueSpecification SpeakableSpecification DataFeed DataCatalog Dataset Map Menu MenuSection MenuItem
Language DefinedTerm DefinedTermSet Duration Reservation Trip Vehicle Car Book Movie Episode MusicRecording
PodcastEpisode SoftwareApplication MobileApplication WebApplication Periodical Collection ClaimReview ImageGallery
ReportageNewsArticle AnalysisNewsArticle OpinionNewsArticle LiveBlogPosting UserComments Photograph WebContent
""".lower().split())
_SCHEMA_PREFIX = re.compile(r"^(?:https?://(?:www\.)?schema\.org/|schema:)", re.IGNORECASE)


def _types(node: dict[str, Any]) -> list[str]:
    raw = node.get("@type")
    values = raw if isinstance(raw, list) else [raw]
    return [_SCHEMA_PREFIX.sub("", value).strip() for value in values if isinstance(value, str) and value.strip()]


def _rank(types: list[str]) -> int:
    """2 for LocalBusiness kin, 1 for Organization kin, 0 for anything else (any case: "organization")."""
    lowered = [t.lower() for t in types]
    if any(t in _LOCAL_TYPES or "business" in t for t in lowered):
        return 2
    if any(t in _ORGANIZATION_TYPES for t in lowered):
        return 1
    return 0


# -- reading structured data ---------------------------------------------------------------------------------


def extract_facts(html: str | bytes, url: str = "") -> Facts:
    """Facts from one page (see the module docstring). Never raises on bad markup or data."""
    text = decode_html(html)
    facts = Facts()
    doc = parse_html(text)
    if doc is None:
        return facts
    facts.description = meta_description(doc)
    problems = facts.problems
    items = _jsonld(doc, problems)
    if doc.xpath("boolean(//*[@itemscope])"):
        items += _extruct(doc, url, "microdata", problems)
    # RDFa parsing reads every element (slow on a big page), and Drupal marks most pages up with
    # typeof="foaf:Document": parse only when a typeof names a business.
    if any(_rank([_SCHEMA_PREFIX.sub("", t).split(":")[-1]]) for v in doc.xpath("//@typeof") for t in v.split()):
        items += _extruct(text.encode("utf-8"), url, "rdfa", problems)
    nodes = list(_known_nodes(items, problems))
    businesses = sorted((node for node in nodes if _rank(_types(node))), key=lambda n: -_rank(_types(n)))
    for node in businesses:
        address = _address(node.get("address"), problems) if facts.address else ""
        if address and _rank(_types(node)) == 2 and place_key(address) != place_key(facts.address):
            add_location(facts, _location(node, address, problems))
        else:
            _fill(facts, node, problems)
    for node in nodes:
        if "faqpage" in (t.lower() for t in _types(node)):
            for pair in _faq(node, problems):
                if pair not in facts.faq:
                    facts.faq.append(pair)
    facts.phones, facts.emails = contact_links(doc)
    if facts.problems:
        logger.debug("Facts on %s: %s", url or "a page", "; ".join(facts.problems))
    return facts


_COMMENT_LINES = re.compile(r"^\s*(?://.*|<!--.*?-->)\s*$", re.MULTILINE)
_WRAPPERS = re.compile(r"^\s*(?:<!--|//\s*<!\[CDATA\[|<!\[CDATA\[)|(?:-->|//\s*\]\]>|\]\]>)\s*$")
_TRAILING_COMMAS = re.compile(r",(\s*[}\]])")


def _jsonld(doc: lxml.html.HtmlElement, problems: list[str]) -> list[Any]:
    items: list[Any] = []
    scripts = [s for s in doc.iter("script") if (s.get("type") or "").strip().lower() == "application/ld+json"]
    for number, script in enumerate(scripts, 1):
        raw = script.text or ""
        if not raw.strip():
            continue
        try:
            data = json.loads(raw, strict=False)
        except ValueError:
            # Leading comments, CDATA wrappers and trailing commas are common and harmless.
            cleaned = _TRAILING_COMMAS.sub(r"\1", _COMMENT_LINES.sub("", _WRAPPERS.sub("", raw.strip())))
            try:
                data = json.loads(cleaned, strict=False)
            except ValueError as exc:
                problems.append(f"jsonld: invalid JSON at block {number} ({exc.msg})")
                continue
        items.extend(data if isinstance(data, list) else [data])
    return items


def _extruct(document: Any, url: str, syntax: str, problems: list[str]) -> list[Any]:
    try:
        found = extruct.extract(document, base_url=url or None, syntaxes=[syntax], uniform=True, errors="strict")
    except Exception as exc:  # a third-party parser on untrusted markup: record the failure and go on
        problems.append(f"{syntax}: unreadable ({type(exc).__name__}: {exc})")
        return []
    items = found.get(syntax, [])
    return _rdfa_nodes(items) if syntax == "rdfa" else items


def _rdfa_nodes(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """extruct's RDFa (expanded, flat JSON-LD) as compact nested dicts: "@value" lists unwrapped, "@id" resolved."""
    by_id = {item.get("@id"): item for item in items if isinstance(item, dict)}

    def compact(node: dict[str, Any], seen: frozenset[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "@type":
                out[key] = value
                continue
            if key.startswith("@"):
                continue
            name = _SCHEMA_PREFIX.sub("", key)
            values = [expand(v, seen) for v in (value if isinstance(value, list) else [value])]
            out[name] = values[0] if len(values) == 1 else values
        return out

    def expand(value: Any, seen: frozenset[str]) -> Any:
        if isinstance(value, dict):
            if "@value" in value:
                return value["@value"]
            ref = value.get("@id")
            if ref in by_id and ref not in seen and len(value) == 1:
                return compact(by_id[ref], seen | {ref})
            if len(value) == 1 and isinstance(ref, str):
                return ref
            return compact(value, seen)
        return value

    referenced = {v.get("@id") for item in items if isinstance(item, dict) for values in item.values()
                  if isinstance(values, list) for v in values if isinstance(v, dict) and len(v) == 1}
    return [compact(item, frozenset({item.get("@id")})) for item in items
            if isinstance(item, dict) and item.get("@type") and item.get("@id") not in referenced]


def _known_nodes(items: list[Any], problems: list[str]) -> Iterator[dict[str, Any]]:
    """Every entity in the items, nested ones included; unknown top-level types are listed and skipped."""
    for item in items:
        if not isinstance(item, dict):
            problems.append(f"structured data: {type(item).__name__} where an object was expected")
            continue
        if "@graph" in item:
            graph = item["@graph"]
            yield from _known_nodes(graph if isinstance(graph, list) else [graph], problems)
            continue
        types = _types(item)
        unknown = [t for t in types if not (_rank([t]) or t.lower() in _OTHER_TYPES)]
        if unknown and len(unknown) == len(types):
            problems.append(f"unknown type {', '.join(unknown)}")
            continue
        yield from _walk(item, 0)


def _walk(value: Any, depth: int) -> Iterator[dict[str, Any]]:
    if depth > 20:
        return
    if isinstance(value, dict):
        if value.get("@type"):
            yield value
        for key, child in value.items():
            if not key.startswith("@") or key == "@graph":
                yield from _walk(child, depth + 1)
    elif isinstance(value, list):
        for child in value:
            yield from _walk(child, depth + 1)


# -- values --------------------------------------------------------------------------------------------------


def _text(value: Any, what: str, problems: list[str]) -> str:
    """A text value: a string, or the first of a list of strings; anything else is a problem."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, list):
                problems.append(f"{what}: nested list skipped")
                continue
            text = _text(item, what, problems)
            if text:
                return text
        return ""
    if isinstance(value, dict):
        for key in ("@value", "name", "value"):
            if isinstance(value.get(key), str):
                return collapse(value[key])
        return ""
    if isinstance(value, str):
        return collapse(value)
    if value is not None:
        problems.append(f"{what}: {type(value).__name__} {value!r} where text was expected")
    return ""


def _fill(facts: Facts, node: dict[str, Any], problems: list[str]) -> None:
    """Fill the facts' empty fields from one business entity."""
    if not facts.name:
        facts.name = _text(node.get("name") or node.get("legalName"), "name", problems)
    if not facts.telephone:
        facts.telephone = _text(node.get("telephone"), "telephone", problems)
    if not facts.email:
        email = _text(node.get("email"), "email", problems)
        facts.email = re.sub(r"^mailto:", "", email, flags=re.IGNORECASE).split("?")[0].strip().lower()
    if not facts.address:
        facts.address = _address(node.get("address"), problems)
    if not facts.hours:
        facts.hours = _hours(node, problems)
    if not facts.areas:
        facts.areas = _areas(node.get("areaServed") or node.get("serviceArea"), problems)
    if not facts.price_range:
        facts.price_range = _text(node.get("priceRange"), "priceRange", problems)


def _location(node: dict[str, Any], address: str, problems: list[str]) -> Location:
    return Location(
        name=_text(node.get("name") or node.get("legalName"), "name", problems),
        address=address,
        telephone=_text(node.get("telephone"), "telephone", problems),
        hours=_hours(node, problems),
    )

_ADDRESS_PARTS = ("streetAddress", "addressLocality", "addressRegion", "postalCode", "addressCountry")


def _address(value: Any, problems: list[str]) -> str:
    if isinstance(value, list):
        for item in value:
            line = _address(item, problems)
            if line:
                return line
        return ""
    if isinstance(value, dict):
        parts = [_text(value.get(part), f"address {part}", problems) for part in _ADDRESS_PARTS]
        return ", ".join(part for part in parts if part)
    return _text(value, "address", problems)


def _areas(value: Any, problems: list[str]) -> list[str]:
    areas: list[str] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, list):
            problems.append("areaServed: nested list skipped")
            continue
        area = _text(item, "areaServed", problems) if item is not None else ""
        if area and area not in areas:
            areas.append(area)
    return areas


# -- opening hours -------------------------------------------------------------------------------------------


def _hours(node: dict[str, Any], problems: list[str]) -> dict[str, list[tuple[str, str]]]:
    """The weekly table from openingHours strings and openingHoursSpecification objects."""
    table: dict[str, list[tuple[str, str]]] = {day: [] for day in DAYS}
    for value in _each(node.get("openingHours"), str, "openingHours", "text", problems):
        week = read_opening_hours(value)
        if week is None:
            problems.append(f"openingHours: cannot read {collapse(value)!r}")
            continue
        for day, spans in week.items():
            table[day].extend(spans)
    for spec in _each(node.get("openingHoursSpecification"), dict, "openingHoursSpecification", "an object", problems):
        _read_hours_spec(spec, table, problems)
    if not any(table.values()):
        return {}
    return {day: sorted(set(spans)) for day, spans in table.items()}


def _each(value: Any, kind: type, what: str, expected: str, problems: list[str]) -> Iterator[Any]:
    """Each of a value or a list of values that is a `kind` (None skipped, anything else listed as a problem)."""
    for item in value if isinstance(value, list) else [value]:
        if item is None:
            continue
        if not isinstance(item, kind):
            problems.append(f"{what}: {type(item).__name__} where {expected} was expected")
            continue
        yield item


def _read_hours_spec(spec: dict[str, Any], table: dict[str, list[tuple[str, str]]], problems: list[str]) -> None:
    if spec.get("validFrom") and spec.get("validFrom") == spec.get("validThrough"):
        return  # one day's special hours (a public holiday), not the weekly table
    raw_days = spec.get("dayOfWeek")
    days = []
    for value in raw_days if isinstance(raw_days, list) else [raw_days]:
        name = _text(value, "dayOfWeek", problems) if not isinstance(value, dict) else str(value.get("@id", ""))
        name = _SCHEMA_PREFIX.sub("", name).strip()
        if name.lower() in ("publicholidays", ""):
            continue
        day = day_named(name)
        if day is None:
            problems.append(f"dayOfWeek: unknown day {name!r}")
            continue
        days.append(day)
    opens = opening_clock(_text(spec.get("opens"), "opens", problems))
    closes = opening_clock(_text(spec.get("closes"), "closes", problems))
    if not days:
        return
    if not opens or not closes:
        problems.append(f"openingHoursSpecification: no opens/closes for {', '.join(days)}")
        return
    if opens == closes == "00:00":
        return  # schema.org's way of saying closed all day
    for day in days:
        table[day].append((opens, closes))


# -- FAQ -----------------------------------------------------------------------------------------------------


def _faq(node: dict[str, Any], problems: list[str]) -> Iterator[tuple[str, str]]:
    entities = node.get("mainEntity")
    for question in entities if isinstance(entities, list) else [entities]:
        if not isinstance(question, dict) or "question" not in (t.lower() for t in _types(question)):
            continue
        asked = _text(question.get("name") or question.get("text"), "Question name", problems)
        answers = question.get("acceptedAnswer") or question.get("suggestedAnswer")
        answer = ""
        for candidate in answers if isinstance(answers, list) else [answers]:
            if isinstance(candidate, dict):
                answer = _html_text(_text(candidate.get("text"), "Answer text", problems))
            elif isinstance(candidate, str):
                answer = _html_text(candidate)
            if answer:
                break
        if asked and answer:
            yield _html_text(asked), answer


def _html_text(value: str) -> str:
    """Answer text may hold HTML (<p>, <br>, <a>): its text, blocks apart."""
    if "<" not in value:
        return collapse(value)
    try:
        fragment = lxml.html.fragment_fromstring(value, create_parent="div")
    except (etree.ParserError, ValueError):
        return collapse(value)
    return block_text(fragment)
