import { describe, expect, it } from "vitest";
import {
  type HistoryTurn,
  isFollowUp,
  parseRewrite,
  previousQuestion,
  rewriteMessages,
  standaloneQuery,
} from "../src/standalone";

const user = (content: string): HistoryTurn => ({ role: "user", content });
const assistant = (content: string): HistoryTurn => ({ role: "assistant", content });

describe("isFollowUp", () => {
  it.each([
    ["how much is it?", true],
    ["and on weekends?", true],
    ["What about Saturdays?", true],
    ["how about gas heaters", true],
    ["also the bathroom tap, and the laundry one", true],
    ["weekends?", true],
    ["Richmond too", true],
    ["is it expensive?", true],
    ["does that include GST?", false], // two content words: searched as it is
    ["how long does it take?", true],
    ["can they come today?", false],
    ["are they licensed?", true],
    ["what if it's an emergency?", true],
    ["How much is a blocked drain?", false],
    ["What's your phone number?", false],
    ["Do you service Richmond?", false],
    ["Is it possible to get a quote for a new hot water system next week?", false],
    ["", false],
    ["???", false],
  ])("%j -> %s", (message, expected) => {
    expect(isFollowUp(message)).toBe(expected);
  });
});

describe("previousQuestion", () => {
  it("is the visitor's latest earlier question", () => {
    const history = [user("Do you fix hot water?"), assistant("Yes."), user("How much is a blocked drain?"), assistant("From $180.")];
    expect(previousQuestion(history, "and on weekends?")).toBe("How much is a blocked drain?");
  });

  it("skips a last turn that repeats the current message", () => {
    const history = [user("How much is a blocked drain?"), assistant("From $180."), user("and on weekends?")];
    expect(previousQuestion(history, "and on weekends?")).toBe("How much is a blocked drain?");
  });

  it("is null without an earlier question", () => {
    expect(previousQuestion([], "hi")).toBeNull();
    expect(previousQuestion([assistant("Hello! How can I help?")], "how much is it?")).toBeNull();
    expect(previousQuestion([user("how much is it?")], "how much is it?")).toBeNull();
    expect(previousQuestion([user("   ")], "how much is it?")).toBeNull();
  });
});

describe("standaloneQuery", () => {
  const history = [user("How much is a call-out?"), assistant("$99 on weekdays.")];

  it.each([
    ["and on weekends?", "How much is a call-out? and on weekends?"],
    ["  how much is it?  ", "How much is a call-out? how much is it?"],
    ["What's your phone number?", "What's your phone number?"],
    ["Do you service Richmond?", "Do you service Richmond?"],
  ])("%j -> %j", (message, expected) => {
    expect(standaloneQuery(message, history)).toBe(expected);
  });

  it("leaves a first message as it is", () => {
    expect(standaloneQuery("and on weekends?", [])).toBe("and on weekends?");
  });
});

describe("rewriteMessages", () => {
  it("gives the model the recent conversation and the last message", () => {
    const history = [user("How much is a call-out?"), assistant("$99 on weekdays.")];
    const messages = rewriteMessages("and on weekends?", history);
    expect(messages).toHaveLength(2);
    expect(messages[0]?.role).toBe("system");
    expect(messages[0]?.content).toContain("standalone search query");
    expect(messages[1]).toEqual({
      role: "user",
      content:
        "Conversation:\nVisitor: How much is a call-out?\nAssistant: $99 on weekdays.\n\n" +
        "Last message: and on weekends?\n\nStandalone query:",
    });
  });

  it("keeps the last 6 turns, each cut to 500 characters", () => {
    const history = Array.from({ length: 9 }, (_, i) => user(`q${i} ${"x".repeat(600)}`));
    const content = rewriteMessages("and?", history)[1]?.content ?? "";
    expect(content).not.toContain("q2 ");
    expect(content).toContain("q3 ");
    expect(content).toContain(`Visitor: q8 ${"x".repeat(497)}\n`);
  });
});

describe("parseRewrite", () => {
  it.each([
    [{ response: "weekend call-out fee" }, "weekend call-out fee"],
    [{ choices: [{ message: { content: '"Weekend call-out fee"\n' } }] }, "Weekend call-out fee"],
    [{ choices: [{ message: { content: "\n\nStandalone query: weekend call-out fee\nBecause..." } }] }, "weekend call-out fee"],
    ["weekend call-out fee", "weekend call-out fee"],
    [{ choices: [{ message: { content: null } }] }, null],
    [{ choices: [] }, null],
    [{ response: "   \n  " }, null],
    [{ response: '""' }, null],
    [{ response: "x".repeat(2001) }, null],
    [null, null],
    [42, null],
  ])("%j -> %j", (output, expected) => {
    expect(parseRewrite(output)).toBe(expected);
  });
});
