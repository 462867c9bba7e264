import { describe, expect, it } from "vitest";
import { intentCategories } from "../src/intent";

describe("intentCategories", () => {
  it.each([
    ["What's your phone number?", ["contact"]],
    ["Can I call you?", ["contact"]],
    ["email address", ["contact"]],
    ["Are you open on Sundays?", ["contact"]],
    ["opening hours", ["contact"]],
    ["How much is a blocked drain?", ["pricing"]],
    ["what does it cost", ["pricing"]],
    ["call-out fee", ["pricing"]],
    ["what's the callout charge", ["pricing"]],
    ["can I get a quote", ["pricing"]],
    ["Which suburbs do you service?", ["location"]],
    ["anyone near Richmond", ["location"]],
    ["where are you located", ["location"]],
    ["Book a plumber", ["booking"]],
    ["schedule an appointment", ["booking"]],
    ["How much to book a plumber near me?", ["pricing", "location", "booking"]],
    ["frozen pipes", []],
    ["phoney", []],
    ["bookshelf", []],
  ])("%j -> %j", (question, expected) => {
    expect(intentCategories(question)).toEqual(expected);
  });
});
