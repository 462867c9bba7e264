/**
 * A question for one of the business's own details (its phone number, email, address or opening
 * hours), answered from the business details without a chat model.
 *
 * A chat model receives the business details with every answer and is told that, when no passage
 * matched, it may still answer from them (prompt.ts NO_PASSAGES): "what's your number?" needs no
 * passage. The extractive answer (extractive.ts) does the same with this module: when no passage
 * gives it a quote, a question that asks for a detail the details hold is answered with that
 * detail, under "From the business details:".
 *
 * What a question asks for (`detailsAsked`), by its words, in English, German, French, Spanish,
 * Italian, Dutch, Portuguese and Chinese (the languages a visitor of a small business's site most
 * often writes in, the site's own language among them):
 *
 *   phone    phone, number, call, ring (not a call-out fee; "call me back" is a callback request,
 *            extractive.ts); Telefon, Nummer, anrufen; téléphone; teléfono; bellen; 電話, 號碼 ...
 *   email    email, e-mail, mail; courriel; correo; 電郵, 邮箱 ...
 *   contact  contact, get in touch, reach you; Kontakt, erreichen; 聯絡, 联系 ...: phone and email
 *   address  address, located, where are you; Adresse, Anschrift, wo seid ihr; dirección; 地址 ...
 *   hours    hours, open, close, what time; Öffnungszeiten, Sprechzeiten, geöffnet, offen; horaires;
 *            horario; 營業時間, 幾點, 有開 ...
 *
 * and only when the question is about the business, not a third party ("What time does Westfield
 * close?" is not): it addresses the business (you, your, ur; ihr, euch, Sie; vous; usted; 你, 您
 * ...), names it (a word of its name, or the practice, the shop, die Praxis, ...), asks for "the
 * number" or "the address" (a visitor on the business's own site means its own), or is a bare
 * request of at most BARE_WORDS words ("phone number?", "Öffnungszeiten?", "email address").
 *
 * What is answered (`detailsAnswer`): each asked detail the facts hold, in the order phone, email,
 * address, hours: the phone numbers; the email addresses; the address when it has a digit (a
 * street number or a postcode: "FL, US" says where, not how to get there), with the other
 * locations; the week's opening hours, day by day. Nothing (null) when the facts hold none of what
 * is asked: the answer is then "not sure", as before.
 */
import type { BusinessFacts } from "./facts";
import { DAYS, dayHoursText } from "./hours";

export type DetailKind = "phone" | "email" | "address" | "hours";

/** The label the answer starts with (extractive.ts's EXTRACTIVE_LABEL is the pages'). */
export const DETAILS_LABEL = "From the business details:";
/** A question of at most this many words asks about the business without naming it. */
export const BARE_WORDS = 4;

/** `words` as whole words (letters and digits may not touch them), case-insensitive. */
function whole(words: string): RegExp {
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${words})(?![\\p{L}\\p{N}])`, "iu");
}

/** `chars` anywhere (Chinese writes no spaces between words). */
function anywhere(chars: string): RegExp {
  return new RegExp(`(?:${chars})`, "u");
}

const PHONE = [
  whole(
    "phones?|telephone|tel|mobile|cell|numbers?|ring|calls|calling|call(?![-\\s]?outs?(?![\\p{L}]))|" +
      "telefon|telefonnummer|rufnummer|handynummer|nummer|anrufen|anruf|" +
      "téléphone|telephone|numéro|numero|appeler|teléfono|telefono|número|llamar|chiamare|" +
      "telefoon|telefoonnummer|bellen|telefone|ligar",
  ),
  anywhere("電話|电话|號碼|号码|致電|致电"),
];
const EMAIL = [
  whole("e-?mails?|mail|mailadresse|e-mail-adresse|courriel|correo|correio"),
  anywhere("電郵|电邮|郵箱|邮箱|電子郵件|电子邮件"),
];
const CONTACT = [
  whole(
    "contact|get in touch|reach (?:you|u)|kontakt|kontaktieren|erreichen|erreiche|contacter|contactar|contattare|" +
      "contatto|contato",
  ),
  anywhere("聯絡|联络|聯繫|联系"),
];
const ADDRESS = [
  whole(
    // An email address is an email's, not where the business is.
    "(?<!mail[\\s-]?)(?:address|adresse|adres)|located|location|locations|where (?:are|r) (?:you|u|ya)|" +
      "where(?:'s| is| are) (?:your|the) (?:shops?|stores?|offices?|practices?|salons?|clinics?|studios?|" +
      "business|branch(?:es)?)|anschrift|wo (?:seid|sind|findet|finde|befindet)|où (?:êtes|se trouve)|" +
      "dirección|direccion|dónde (?:están|está|se encuentra)|indirizzo|dove (?:siete|si trova)|" +
      "waar (?:zijn|zit)|endereço|endereco",
  ),
  anywhere("地址|住址|在哪"),
];
const HOURS = [
  whole(
    "hours|open|opens|opening|close|closes|closing|closed|what time|" +
      "öffnungszeiten|oeffnungszeiten|sprechzeiten|sprechstunden?|geöffnet|geoeffnet|offen|geschlossen|" +
      "horaires?|ouvert|ouverte|ouvrez|fermé|fermez|horarios?|abierto|abren|cerrado|cierran|" +
      "orari|orario|aperto|aperti|chiuso|chiudete|openingstijden|geopend|gesloten|horário|aberto|fechado",
  ),
  anywhere("營業|营业|開門|开门|關門|关门|幾點|几点|有開|有开|開嗎|开吗"),
];

/** Words with which a question addresses the business. */
const ADDRESSED = [
  whole(
    "you|your|yours|u|ur|ya|yall|y'all|ihr|euch|euer|eure|sie|ihnen|ihre|vous|votre|vos|tu|usted|ustedes|" +
      "vosotros|voi|vostro|vostra|jullie|jij|uw|você|vocês|voce|voces",
  ),
  anywhere("你|您|貴|贵"),
];
/** Words with which a question names a small business without its name ("the number": its own). */
const BUSINESS = [
  whole(
    "the (?:(?:phone|telephone) )?number|the (?:e-?mail|address|opening hours|hours)|" +
      "practice|shop|store|salon|office|clinic|studio|business|company|restaurant|cafe|café|bakery|" +
      "praxis|laden|geschäft|büro|kanzlei|werkstatt|firma|magasin|boutique|cabinet|tienda|negocio|negozio|" +
      "winkel|loja",
  ),
  anywhere("店|診所|诊所"),
];

function matches(patterns: readonly RegExp[], text: string): boolean {
  return patterns.some((pattern) => pattern.test(text));
}

/** Whether `question` is about the business named `name` (the module docstring). */
export function aboutTheBusiness(question: string, name = ""): boolean {
  const text = question.normalize("NFC");
  if (matches(ADDRESSED, text) || matches(BUSINESS, text)) return true;
  const own = (name.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []).filter((word) => !/^\d+$/u.test(word));
  if (own.some((word) => whole(word.replace(/[.*+?^${}()|[\]\\]/gu, "\\$&")).test(text))) return true;
  return text.trim().split(/\s+/u).filter((word) => /[\p{L}\p{N}]/u.test(word)).length <= BARE_WORDS;
}

/** The details `question` asks for (none when it is not about the business), in a fixed order. */
export function detailsAsked(question: string, name = ""): DetailKind[] {
  const text = question.normalize("NFC");
  const asked = new Set<DetailKind>();
  const contact = matches(CONTACT, text);
  if (contact || matches(PHONE, text)) asked.add("phone");
  if (contact || matches(EMAIL, text)) asked.add("email");
  if (matches(ADDRESS, text)) asked.add("address");
  if (matches(HOURS, text)) asked.add("hours");
  if (asked.size === 0 || !aboutTheBusiness(text, name)) return [];
  return (["phone", "email", "address", "hours"] as const).filter((kind) => asked.has(kind));
}

/** A street address or a postcode has a digit; "FL, US" does not. */
function streetAddress(address: string): boolean {
  return /\p{N}/u.test(address);
}

/**
 * The answer's lines ("• Phone: ...", sub-lines "  – ..."), each asked detail the facts hold;
 * null when they hold none of what `question` asks for.
 */
export function detailsAnswer(question: string, facts: BusinessFacts): string[] | null {
  const lines: string[] = [];
  for (const kind of detailsAsked(question, facts.name)) {
    if (kind === "phone" && facts.phones.length > 0) {
      lines.push(`• Phone: ${facts.phones.join(", ")}`);
    } else if (kind === "email" && facts.emails.length > 0) {
      lines.push(`• Email: ${facts.emails.join(", ")}`);
    } else if (kind === "address") {
      if (streetAddress(facts.address)) lines.push(`• Address: ${facts.address}`);
      const places = facts.locations.filter((place) => streetAddress(place.address));
      if (places.length > 0) {
        lines.push("• Other locations:");
        for (const place of places) {
          const phone = place.phone ? ` (phone ${place.phone})` : "";
          lines.push(`  – ${place.name ? `${place.name}: ` : ""}${place.address}${phone}`);
        }
      }
    } else if (kind === "hours" && facts.hours !== null) {
      const hours = facts.hours;
      const where = facts.locations.length > 0 && streetAddress(facts.address) ? ` at ${facts.address}` : "";
      lines.push(`• Opening hours${where}:`);
      for (const day of DAYS) lines.push(`  – ${day}: ${dayHoursText(hours, day)}`);
    }
  }
  return lines.length > 0 ? lines : null;
}
